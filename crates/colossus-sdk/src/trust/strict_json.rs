//! A strict reader of one JSON object, for the descriptor and the bootstrap reply: valid
//! UTF-8, RFC 8259 grammar only, no duplicate member at any depth, nesting bounded, nothing
//! after the value. serde_json keeps the last of two duplicate members, so it cannot say
//! whether a file named two endpoints; this reader refuses such a file instead.

/// Nesting bound, so a hostile file cannot exhaust the stack (the Go SDK's bound).
const MAX_DEPTH: usize = 32;

/// A parsed JSON value. Numbers keep their text: callers decide what an integer is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The string, when this value is a JSON string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer above zero written as a plain integer literal (no fraction, no
    /// exponent), when it fits an `i64`.
    pub(crate) fn as_positive_int(&self) -> Option<i64> {
        match self {
            Value::Number(text) if !text.contains(['.', 'e', 'E']) => {
                text.parse::<i64>().ok().filter(|n| *n > 0)
            }
            _ => None,
        }
    }
}

/// The top-level members of one JSON object, in file order (no duplicates).
pub(crate) type Members = Vec<(String, Value)>;

/// Looks a member up by its exact name.
pub(crate) fn member<'a>(members: &'a Members, name: &str) -> Option<&'a Value> {
    members.iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// Parses `raw` as exactly one JSON object. The error says what is wrong in words that
/// follow the file's name ("is not valid JSON").
pub(crate) fn parse_object(raw: &[u8]) -> Result<Members, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "is not valid UTF-8".to_owned())?;
    let mut p = Parser {
        bytes: text.as_bytes(),
        pos: 0,
    };
    p.skip_ws();
    if p.peek() != Some(b'{') {
        // Distinguish a document that is not JSON at all from one that is another value.
        return Err(match p.value(1) {
            Ok(_) => "must be a JSON object".to_owned(),
            Err(e) => e,
        });
    }
    let value = p.value(0)?;
    p.skip_ws();
    if p.pos != p.bytes.len() {
        return Err("has data after the JSON value".to_owned());
    }
    match value {
        Value::Object(members) => Ok(members),
        _ => Err("must be a JSON object".to_owned()),
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

fn invalid() -> String {
    "is not valid JSON".to_owned()
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("is nested too deeply".to_owned());
        }
        self.skip_ws();
        let value = match self.peek().ok_or_else(invalid)? {
            b'{' => self.object(depth)?,
            b'[' => self.array(depth)?,
            b'"' => Value::String(self.string()?),
            b't' => self.literal("true", Value::Bool(true))?,
            b'f' => self.literal("false", Value::Bool(false))?,
            b'n' => self.literal("null", Value::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return Err(invalid()),
        };
        self.skip_ws();
        Ok(value)
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.pos += 1;
        let mut members: Vec<(String, Value)> = Vec::new();
        self.skip_ws();
        if self.eat(b'}') {
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(invalid());
            }
            let key = self.string()?;
            self.skip_ws();
            if !self.eat(b':') {
                return Err(invalid());
            }
            let value = self.value(depth + 1)?;
            if members.iter().any(|(k, _)| *k == key) {
                return Err(format!("has the member {key:?} twice"));
            }
            members.push((key, value));
            if self.eat(b',') {
                continue;
            }
            if self.eat(b'}') {
                return Ok(Value::Object(members));
            }
            return Err(invalid());
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            if self.eat(b',') {
                continue;
            }
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            return Err(invalid());
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, String> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(invalid())
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        self.eat(b'-');
        if self.eat(b'0') {
            // No leading zeros: "01" is not a JSON number.
        } else if self.digits() == 0 {
            return Err(invalid());
        }
        if self.eat(b'.') && self.digits() == 0 {
            return Err(invalid());
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return Err(invalid());
            }
        }
        // A digit right after "0" (as in "01") is left over and fails the caller.
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| invalid())?;
        Ok(Value::Number(text.to_owned()))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let chunk = self.bytes.get(self.pos..self.pos + 4).ok_or_else(invalid)?;
        let text = std::str::from_utf8(chunk).map_err(|_| invalid())?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid());
        }
        self.pos += 4;
        u32::from_str_radix(text, 16).map_err(|_| invalid())
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The input is valid UTF-8 and the stops are ASCII, so this slice is too.
            out.push_str(std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|_| invalid())?);
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escape = self.peek().ok_or_else(invalid)?;
                    self.pos += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode_escape()?),
                        _ => return Err(invalid()),
                    }
                }
                // A raw control character or the end of input inside a string.
                _ => return Err(invalid()),
            }
        }
    }

    /// `\uXXXX`, joining a surrogate pair; a lone surrogate becomes U+FFFD, as Go's and
    /// Python's decoders read it (the value is then refused by whatever grammar applies).
    fn unicode_escape(&mut self) -> Result<char, String> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) && self.bytes[self.pos..].starts_with(b"\\u") {
            let save = self.pos;
            self.pos += 2;
            let second = self.hex4()?;
            if (0xDC00..0xE000).contains(&second) {
                let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or('\u{FFFD}'));
            }
            self.pos = save;
        }
        Ok(char::from_u32(first).unwrap_or('\u{FFFD}'))
    }
}

#[cfg(test)]
mod tests;
