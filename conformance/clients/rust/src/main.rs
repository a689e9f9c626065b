//! The Rust SDK's conformance client. It speaks the client protocol of
//! conformance/docs/client-protocol.md: JSON lines on stdin and stdout, bearers as
//! length-prefixed frames on the descriptor named by `--bearer-fd` (or `--bearer-fifo`). It
//! uses only the SDK's public API, performs each step it is told to, and reports what
//! happened; it never decides whether a case passed.

mod errors;
mod rebuild;
mod steps;
mod views;

use std::fs::File;
use std::io::{BufRead, Read, Write};

use serde_json::{Value, json};
use tokio::sync::mpsc;

const PROTOCOL_VERSION: u64 = 1;

fn main() {
    if let Err(err) = rebuild::run_against_sdk_copy() {
        eprintln!("rust-client: cannot run against the SDK copy: {err}");
        std::process::exit(2);
    }
    let bearers = match open_bearer_source(std::env::args().skip(1).collect()) {
        Ok(file) => file,
        Err(err) => {
            eprintln!("rust-client: {err}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let code = runtime.block_on(serve(bearers));
    // Connections a case left behind (a hung close) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    std::process::exit(code);
}

/// The bearer pipe: `--bearer-fd N` (an inherited descriptor, opened through /dev/fd so no
/// unsafe code is needed) or `--bearer-fifo PATH`.
fn open_bearer_source(args: Vec<String>) -> Result<File, String> {
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (flag, value) = match arg.split_once('=') {
            Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let value = match value {
            Some(v) => Some(v),
            None if flag == "--bearer-fd" || flag == "--bearer-fifo" => it.next(),
            None => None,
        };
        match (flag.as_str(), value) {
            ("--bearer-fd", Some(fd)) => {
                let fd: u32 = fd
                    .parse()
                    .map_err(|_| format!("--bearer-fd {fd} is not a descriptor"))?;
                return File::open(format!("/dev/fd/{fd}"))
                    .map_err(|e| format!("cannot open the bearer descriptor: {e}"));
            }
            ("--bearer-fifo", Some(path)) => {
                return File::open(&path).map_err(|e| format!("cannot open the bearer fifo: {e}"));
            }
            _ => {}
        }
    }
    Err("--bearer-fd or --bearer-fifo is required".into())
}

/// The protocol's two streams, shared by the loop below and by sync points inside a case.
pub(crate) struct Protocol {
    lines: mpsc::UnboundedReceiver<Result<String, String>>,
}

impl Protocol {
    /// Lines of stdin arrive from a thread of their own, so waiting for one (at a sync
    /// point) never blocks the runtime the SDK's connections live on.
    fn start() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let failed = line.is_err();
                if tx.send(line.map_err(|e| e.to_string())).is_err() || failed {
                    return;
                }
            }
        });
        Protocol { lines: rx }
    }

    pub(crate) fn write(&self, msg: &Value) {
        let mut out = std::io::stdout().lock();
        let line = serde_json::to_string(msg).expect("a JSON value encodes");
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            eprintln!("rust-client: stdout closed");
        }
    }

    /// The next non-empty line as a JSON object; `Ok(None)` once stdin closes.
    pub(crate) async fn next_message(&mut self) -> Result<Option<Value>, String> {
        loop {
            let Some(line) = self.lines.recv().await else {
                return Ok(None);
            };
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let msg: Value =
                serde_json::from_str(&line).map_err(|e| format!("unreadable line: {e}"))?;
            if !msg.is_object() {
                return Err("a line that is not a JSON object".into());
            }
            return Ok(Some(msg));
        }
    }

    /// Tells the runner that a step reached its sync point and waits until the runner
    /// releases it (it restarts or stops the worker meanwhile); the caller then goes on with
    /// the same SDK client and, inside a watch, the same stream.
    pub(crate) async fn wait_for_release(&mut self, case: &str, step: &str) -> Result<(), String> {
        self.write(&json!({"type": "sync", "case": case, "step": step}));
        let msg = self
            .next_message()
            .await
            .map_err(|e| format!("waiting at sync point {step}: {e}"))?
            .ok_or_else(|| format!("stdin closed at sync point {step}"))?;
        if msg["type"] != "release" || msg["step"] != step {
            return Err(format!(
                "expected the release of sync point {step}, got a {} message",
                msg["type"]
            ));
        }
        Ok(())
    }
}

async fn serve(mut bearers: File) -> i32 {
    let mut protocol = Protocol::start();
    loop {
        let msg = match protocol.next_message().await {
            Ok(Some(msg)) => msg,
            Ok(None) => return 0,
            Err(err) => {
                eprintln!("rust-client: {err}");
                return 2;
            }
        };
        match msg["type"].as_str() {
            Some("hello") => protocol.write(&json!({
                "type": "client_hello",
                "protocol_version": PROTOCOL_VERSION,
                "sdk": "rust",
                "sdk_version": colossus_sdk::VERSION,
                "features": ["daemon", "sidecar", "reconnect_hook", "artifacts", "credential_calls"],
                "retry_budget": steps::retry_budget(),
            })),
            Some("shutdown") => return 0,
            Some("case") => {
                let result = run_case(&msg, &mut bearers, &mut protocol).await;
                protocol.write(&result);
            }
            other => {
                eprintln!("rust-client: unknown message type {other:?}");
                return 2;
            }
        }
    }
}

fn read_frame(pipe: &mut File) -> Result<Vec<u8>, String> {
    let mut header = [0u8; 4];
    pipe.read_exact(&mut header)
        .map_err(|_| "bearer pipe closed".to_owned())?;
    let mut body = vec![0u8; u32::from_be_bytes(header) as usize];
    pipe.read_exact(&mut body)
        .map_err(|_| "bearer pipe closed mid-frame".to_owned())?;
    Ok(body)
}

async fn run_case(msg: &Value, pipe: &mut File, protocol: &mut Protocol) -> Value {
    let name = msg["case"].as_str().unwrap_or_default().to_owned();
    let mut bearers = std::collections::HashMap::new();
    for spec in msg["connections"].as_array().into_iter().flatten() {
        if spec["bearer_frame"].as_bool() == Some(true) {
            match read_frame(pipe) {
                Ok(frame) => {
                    let conn = spec["name"].as_str().unwrap_or_default().to_owned();
                    bearers.insert(conn, frame);
                }
                Err(err) => {
                    return json!({"type": "result", "case": name, "steps": [], "fatal": err});
                }
            }
        }
    }
    eprintln!("rust-client: case {name}");
    let mut run = steps::CaseRun::new(msg.clone(), bearers);
    let steps = run.run(protocol).await;
    run.close().await;
    match steps {
        Ok(steps) => json!({"type": "result", "case": name, "steps": steps}),
        Err(fatal) => json!({"type": "result", "case": name, "steps": [], "fatal": fatal}),
    }
}
