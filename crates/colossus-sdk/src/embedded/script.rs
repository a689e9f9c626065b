//! The run-script language of the reference worker (`colossus-script v1`, see
//! conformance/docs/reference-worker.md, "Run scripts"): one step per line.

/// The first line of a script.
pub(crate) const HEADER: &str = "colossus-script v1";
const MAX_STEPS: usize = 20_000;
const MAX_QUESTION_BYTES: usize = 4096;
const MAX_CHOICE_BYTES: usize = 256;
const MAX_FAILURE_MESSAGE_BYTES: usize = 4096;
const MAX_SLEEP_MS: u64 = 600_000;

/// One step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Say(String),
    Tool {
        tool: String,
        fail: bool,
    },
    Approve {
        tool: String,
        origin: Option<String>,
    },
    Ask {
        question: String,
        choices: Vec<String>,
    },
    /// `None`: forever (until cancelled).
    Sleep(Option<u64>),
    Effect,
    Crash,
    Fail {
        code: String,
        message: String,
    },
    Plan(String),
    Research,
}

pub(crate) fn is_script(text: &str) -> bool {
    text.split('\n').next().is_some_and(|l| l.trim() == HEADER)
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('\\') => out.push('\\'),
            Some('|') => out.push('|'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Splits on `|` not preceded by a backslash.
fn split_unescaped_bars(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'|' && (i == 0 || bytes[i - 1] != b'\\') {
            pieces.push(&text[start..i]);
            start = i + 1;
        }
    }
    pieces.push(&text[start..]);
    pieces
}

fn tool_name(name: &str, line: usize) -> Result<String, String> {
    if super::tools::face(name).is_none() {
        return Err(format!("line {line}: unknown tool {name:?}"));
    }
    Ok(name.to_owned())
}

fn origin(value: &str, line: usize) -> Result<String, String> {
    let bad = || format!("line {line}: the origin must be https://host[:port]");
    let rest = value.strip_prefix("https://").ok_or_else(bad)?;
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || rest.starts_with('[') => (h, Some(p)),
        _ => (rest, None),
    };
    let host_ok = (1..=253).contains(&host.len())
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-[]:".contains(&b));
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
    if host_ok && port_ok {
        Ok(value.to_owned())
    } else {
        Err(bad())
    }
}

fn step(words: &str, line: usize) -> Result<Step, String> {
    let (op, rest) = words.split_once(' ').unwrap_or((words, ""));
    let rest = rest.trim();
    let args: Vec<&str> = rest.split_whitespace().collect();
    match op {
        "say" if !rest.is_empty() => Ok(Step::Say(unescape(rest))),
        "tool" => match args.as_slice() {
            [name] => Ok(Step::Tool {
                tool: tool_name(name, line)?,
                fail: false,
            }),
            [name, mode @ ("ok" | "fail")] => Ok(Step::Tool {
                tool: tool_name(name, line)?,
                fail: *mode == "fail",
            }),
            _ => Err(format!("line {line}: tool NAME [ok|fail]")),
        },
        "approve" => match args.as_slice() {
            [name] => Ok(Step::Approve {
                tool: tool_name(name, line)?,
                origin: None,
            }),
            [name, o] => Ok(Step::Approve {
                tool: tool_name(name, line)?,
                origin: Some(origin(o, line)?),
            }),
            _ => Err(format!("line {line}: approve NAME [ORIGIN]")),
        },
        "ask" => {
            let pieces: Vec<String> = split_unescaped_bars(rest)
                .into_iter()
                .map(|p| unescape(p.trim()))
                .collect();
            let (question, choices) = pieces
                .split_first()
                .ok_or_else(|| format!("line {line}: ask needs a question"))?;
            let mut seen = std::collections::HashSet::new();
            let ok = !question.is_empty()
                && question.len() <= MAX_QUESTION_BYTES
                && (1..=16).contains(&choices.len())
                && choices.iter().all(|c| {
                    !c.is_empty() && c.len() <= MAX_CHOICE_BYTES && seen.insert(c.clone())
                });
            if !ok {
                return Err(format!(
                    "line {line}: ask QUESTION | CHOICE... with 1-16 unique choices"
                ));
            }
            Ok(Step::Ask {
                question: question.clone(),
                choices: choices.to_vec(),
            })
        }
        "sleep" if rest == "forever" => Ok(Step::Sleep(None)),
        "sleep" => match rest.parse::<u64>() {
            Ok(ms) if ms <= MAX_SLEEP_MS && rest.len() <= 6 => Ok(Step::Sleep(Some(ms))),
            _ => Err(format!(
                "line {line}: sleep MS (at most {MAX_SLEEP_MS}) or sleep forever"
            )),
        },
        "fail" => {
            let (code, message) = rest.split_once(' ').unwrap_or((rest, ""));
            let code_ok = (1..=64).contains(&code.len())
                && code.as_bytes()[0].is_ascii_lowercase()
                && code
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            let message = unescape(message.trim());
            let message = if message.is_empty() {
                "the script failed".to_owned()
            } else {
                message
            };
            if !code_ok || message.len() > MAX_FAILURE_MESSAGE_BYTES {
                return Err(format!("line {line}: fail CODE [MESSAGE]"));
            }
            Ok(Step::Fail {
                code: code.to_owned(),
                message,
            })
        }
        "effect" if rest.is_empty() => Ok(Step::Effect),
        "crash" if rest.is_empty() => Ok(Step::Crash),
        "research" if rest.is_empty() => Ok(Step::Research),
        "plan" => Ok(Step::Plan(if rest.is_empty() {
            "Draft plan".to_owned()
        } else {
            unescape(rest)
        })),
        _ => Err(format!("line {line}: unknown step {op:?}")),
    }
}

/// Parses a whole script (its first line is [`HEADER`]); errors name the line.
pub(crate) fn parse(text: &str) -> Result<Vec<Step>, String> {
    let mut lines = text.split('\n');
    if lines.next().map(str::trim) != Some(HEADER) {
        return Err(format!("line 1: a script starts with {HEADER:?}"));
    }
    let mut steps = Vec::new();
    for (i, raw) in lines.enumerate() {
        let number = i + 2;
        let mut line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut count = 1usize;
        if let Some(rest) = line.strip_prefix("repeat ") {
            let rest = rest.trim_start();
            let (n, inner) = rest
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("line {number}: repeat N STEP"))?;
            count = n
                .parse::<usize>()
                .ok()
                .filter(|c| (1..=MAX_STEPS).contains(c) && n.len() <= 6)
                .ok_or_else(|| format!("line {number}: repeat count out of range"))?;
            line = inner.trim();
        }
        let s = step(line, number)?;
        if steps.len() + count > MAX_STEPS {
            return Err(format!(
                "line {number}: the script has more than {MAX_STEPS} steps"
            ));
        }
        steps.extend(std::iter::repeat_n(s, count));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests;
