//! The reference worker (`dev`: enrolled with every scope, serving a private folder).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use colossus_sdk::Bearer;
use colossus_sdk::credentials::InMemoryCredentialProvider;
use colossus_sdk::placement::DaemonOptions;

use crate::AnyResult;

/// A private (0700) folder, removed on drop.
pub(crate) struct PrivateDir(pub(crate) PathBuf);

impl PrivateDir {
    pub(crate) fn new(name: &str) -> AnyResult<PrivateDir> {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).map_err(|e| e.to_string())?;
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let path = std::env::temp_dir().join(format!("colossus-rs-bench-{name}-{hex}"));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(PrivateDir(path))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) struct DevWorker {
    child: Child,
    pub(crate) dir: PrivateDir,
    pub(crate) instance_id: String,
    pub(crate) pin: String,
    pub(crate) bearer: String,
}

impl DevWorker {
    pub(crate) fn start(exe: &Path) -> AnyResult<DevWorker> {
        let dir = PrivateDir::new("worker")?;
        let mut child = Command::new(exe)
            .arg("dev")
            .arg("--public-api-dir")
            .arg(&dir.0)
            .args(["--json", "--log-level", "WARNING"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        match Self::identity(&mut child, &dir.0) {
            Ok((instance_id, pin, bearer)) => Ok(DevWorker {
                child,
                dir,
                instance_id,
                pin,
                bearer,
            }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// The instance ID, pin and bearer `dev` printed, once it serves.
    fn identity(child: &mut Child, dir: &Path) -> AnyResult<(String, String, String)> {
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let line = lines.next().ok_or("dev printed nothing")??;
        // Whatever else it prints must not fill the pipe.
        std::thread::spawn(move || for _ in lines {});
        let info: serde_json::Value = serde_json::from_str(&line)?;
        let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
        let (Some(instance_id), Some(pin), Some(bearer_path)) = (
            text(&info["instance_id"]),
            text(&info["certificate_sha256"]),
            text(&info["bearer"]["path"]),
        ) else {
            return Err(format!("dev printed no identity: {line}").into());
        };
        let bearer = std::fs::read_to_string(bearer_path)?.trim().to_owned();
        for _ in 0..600 {
            if dir.join("endpoint.json").exists() {
                return Ok((instance_id, pin, bearer));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("the worker did not publish endpoint.json".into())
    }

    pub(crate) fn options(&self) -> AnyResult<DaemonOptions> {
        Ok(DaemonOptions::builder()
            .public_api_dir(&self.dir.0)
            .expected_instance_id(&self.instance_id)
            .expected_certificate_sha256(&self.pin)
            .credentials(InMemoryCredentialProvider::new(Bearer::new(
                self.bearer.clone(),
            )?))
            .build()?)
    }
}

/// Stops the worker (SIGTERM, then SIGKILL after 10 s), on every way out.
impl Drop for DevWorker {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
