//! The shared parser vectors of conformance/vectors/ (every SDK gives every vector the
//! same verdict and reason), and the Rust verdict program of conformance/parsers_diff:
//! with `COLOSSUS_PARSERS_DIFF=1`, the `parsers_diff_verdicts` test reads JSON lines
//! `{"kind": ..., <vector members>}` on stdin and prints one verdict line per input,
//! from the same parsers the vector test calls.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde_json::Value;

use super::bearer::Bearer;
use super::certificate::parse_leaf_certificate;
use super::descriptor::{parse_descriptor, parse_endpoint};
use super::strict_json::{member as strict_member, parse_object};
use crate::placement::sidecar::bootstrap::parse_reply;
use crate::{Error, Kind, Result};

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conformance/vectors")
}

fn text<'a>(v: &'a Value, name: &str) -> &'a str {
    v.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// Runs the parser a vector's kind names; `member` reads one of its string members.
fn parse_vector<'a>(kind: &str, member: impl Fn(&str) -> &'a str) -> Result<()> {
    match kind {
        "descriptor" => parse_descriptor(member("text").as_bytes()).map(drop),
        "endpoint" => parse_endpoint(member("endpoint")).map(drop),
        "certificate" => {
            let host = member("host").parse().ok();
            parse_leaf_certificate(member("pem").as_bytes(), host).map(drop)
        }
        "bearer" => Bearer::new(member("bearer").to_owned()).map(drop),
        "bootstrap_reply" => parse_reply(member("text").as_bytes()).map(drop),
        other => panic!("unknown vector kind {other}"),
    }
}

/// The conformance protocol's error kind of a result, as the conformance client maps it.
fn verdict(result: &Result<()>) -> &'static str {
    match result {
        Ok(()) => "accept",
        Err(e) if e.is(Kind::Trust) => "trust",
        Err(e) if e.is(Kind::Credential) => "credential",
        Err(e) if e.is(Kind::Sidecar) => "sidecar",
        Err(_) => "other",
    }
}

#[test]
fn every_shared_vector_gets_its_verdict_and_reason() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(vectors_dir())
        .expect("the shared vectors must be present")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 5,
        "expected the five shared vector files, found {files:?}"
    );
    let mut failures = Vec::new();
    let mut total = 0;
    for path in &files {
        let file: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let kind = file["kind"].as_str().unwrap();
        let vectors = file["vectors"].as_array().unwrap();
        assert!(!vectors.is_empty(), "{path:?} holds no vectors");
        for v in vectors {
            total += 1;
            let name = format!(
                "{}/{}",
                path.file_name().unwrap().to_string_lossy(),
                text(v, "name")
            );
            let result = parse_vector(kind, |m| text(v, m));
            let (got, want) = (verdict(&result), text(v, "expect"));
            if got != want {
                failures.push(format!("{name}: got {got}, want {want} ({result:?})"));
                continue;
            }
            if let Err(e) = &result {
                // The same local reason in every SDK, a message, and no status code.
                let want_reason = v.get("reason").and_then(Value::as_str);
                if e.reason() != want_reason || e.code().is_some() || e.message().is_empty() {
                    failures.push(format!(
                        "{name}: got reason {:?} code {:?}, want reason {want_reason:?} and no code",
                        e.reason(),
                        e.code()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} vectors failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(total > 300, "only {total} vectors were read");
}

/// One verdict line for one input line. The line is read with the SDK's own JSON reader,
/// which turns a lone surrogate escape into U+FFFD as the Go and Python readers do
/// (serde_json refuses the line, and a Rust string cannot hold one).
fn answer(line: &str) -> String {
    let input = parse_object(line.as_bytes()).expect("an input line is one JSON object");
    let member = |name: &str| {
        strict_member(&input, name)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
    };
    let result = parse_vector(member("kind"), member);
    let mut out = serde_json::json!({"verdict": verdict(&result)});
    if let Err(e) = &result {
        out["error"] = Value::String(describe(e).to_owned());
    }
    out.to_string()
}

fn describe(e: &Error) -> &'static str {
    e.kind().describe()
}

#[test]
fn parsers_diff_verdicts() {
    if std::env::var_os("COLOSSUS_PARSERS_DIFF").is_some() {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        for line in std::io::stdin().lock().lines() {
            writeln!(out, "{}", answer(&line.unwrap())).unwrap();
        }
        out.flush().unwrap();
        return;
    }
    // Without the variable, the program answers a small batch, in order.
    let lines = [
        r#"{"kind": "endpoint", "endpoint": "https://127.0.0.1:1"}"#,
        r#"{"kind": "endpoint", "endpoint": "https://localhost:1"}"#,
        r#"{"kind": "bearer", "bearer": "short"}"#,
        r#"{"kind": "bootstrap_reply", "text": "nope"}"#,
        r#"{"kind": "bearer", "bearer": "\ud800"}"#,
    ];
    let got: Vec<String> = lines.iter().map(|l| answer(l)).collect();
    assert_eq!(
        got,
        [
            r#"{"verdict":"accept"}"#,
            r#"{"error":"descriptor rejected","verdict":"trust"}"#,
            r#"{"error":"credential rejected","verdict":"credential"}"#,
            r#"{"error":"sidecar failure","verdict":"sidecar"}"#,
            r#"{"error":"credential rejected","verdict":"credential"}"#,
        ]
    );
}
