//! Elicitation on a terminal: the server's form walked field by field (each answer typed and
//! checked against the requested schema), or a URL-mode request shown for consent. The
//! prompting reads a [`BufRead`] and writes a [`Write`], so it is tested without a terminal;
//! [`answer`] decides whether there is one.

use std::io::{self, BufRead, IsTerminal, Write};

use oxmcp_jsonrpc::printable;
use oxmcp_types::{ElicitAction, ElicitParams, ElicitResult, JsonObject};
use serde_json::{Number, Value};

/// Answers an `elicitation/create`: on a terminal the user is asked (on stderr, reading
/// stdin); without one the request is declined, with a note on stderr.
pub(crate) async fn answer(params: ElicitParams) -> ElicitResult {
    if !io::stdin().is_terminal() {
        eprintln!(
            "oxmcp: the server asked for input ({}); declined: stdin is not a terminal",
            printable(&params.message)
        );
        return result(ElicitAction::Decline, None);
    }
    // One prompt at a time: requests that arrive together wait for the terminal in turn.
    static TERMINAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = TERMINAL.lock().await;
    let asked = tokio::task::spawn_blocking(move || {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut out = io::stderr();
        ask(&params, &mut input, &mut out)
    })
    .await;
    match asked {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            eprintln!("oxmcp: cannot ask on the terminal ({e}); cancelled");
            result(ElicitAction::Cancel, None)
        }
        Err(e) => {
            eprintln!("oxmcp: the prompt failed ({e}); cancelled");
            result(ElicitAction::Cancel, None)
        }
    }
}

fn result(action: ElicitAction, content: Option<JsonObject>) -> ElicitResult {
    ElicitResult::cancel()
        .with_action(action)
        .with_content(content)
}

/// Asks the user about one elicitation: URL mode or form mode. End of input cancels.
pub(crate) fn ask(
    params: &ElicitParams,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> io::Result<ElicitResult> {
    writeln!(out, "\nThe server asks: {}", printable(&params.message))?;
    if params.mode.as_deref() == Some("url") {
        return ask_url(params, input, out);
    }
    let Some(choice) = consent(
        input,
        out,
        "Answer? [y]es, [n]o (decline), [c]ancel",
        Some('y'),
    )?
    else {
        return Ok(result(ElicitAction::Cancel, None));
    };
    match choice {
        'y' => {}
        'n' => return Ok(result(ElicitAction::Decline, None)),
        _ => return Ok(result(ElicitAction::Cancel, None)),
    }
    let schema = params.requested_schema.clone().unwrap_or_default();
    match fill(&schema, input, out)? {
        Some(content) => Ok(result(ElicitAction::Accept, Some(content))),
        None => Ok(result(ElicitAction::Cancel, None)),
    }
}

/// URL mode: the URL is shown (never opened by us); the user consents or not.
fn ask_url(
    params: &ElicitParams,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> io::Result<ElicitResult> {
    let url = params.url.as_deref().unwrap_or("");
    writeln!(out, "It wants you to open this URL: {}", printable(url))?;
    let asked = consent(
        input,
        out,
        "Will you open it? [y]es, [n]o (decline), [c]ancel",
        None,
    )?;
    let action = match asked {
        Some('y') => ElicitAction::Accept,
        Some('n') => ElicitAction::Decline,
        _ => ElicitAction::Cancel,
    };
    Ok(result(action, None))
}

/// Asks a y/n/c question until the answer is one of them; `None` at end of input.
fn consent(
    input: &mut impl BufRead,
    out: &mut impl Write,
    question: &str,
    default: Option<char>,
) -> io::Result<Option<char>> {
    loop {
        let Some(line) = read_answer(input, out, question)? else {
            return Ok(None);
        };
        let word = line.to_lowercase();
        match (word.as_str(), default) {
            ("", Some(d)) => return Ok(Some(d)),
            ("y" | "yes", _) => return Ok(Some('y')),
            ("n" | "no", _) => return Ok(Some('n')),
            ("c" | "cancel", _) => return Ok(Some('c')),
            _ => writeln!(out, "  please answer y, n or c")?,
        }
    }
}

/// Writes `question: ` and reads one line, trimmed; `None` at end of input.
fn read_answer(
    input: &mut impl BufRead,
    out: &mut impl Write,
    question: &str,
) -> io::Result<Option<String>> {
    write!(out, "{question}: ")?;
    out.flush()?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        writeln!(out)?;
        return Ok(None);
    }
    Ok(Some(line.trim().to_owned()))
}

/// Walks the schema's properties in order; `None` if the input ended first.
fn fill(
    schema: &JsonObject,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> io::Result<Option<JsonObject>> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = JsonObject::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut content = JsonObject::new();
    for (name, field) in properties {
        let field = Field::new(name, field, required.contains(&name.as_str()));
        match field.ask(input, out)? {
            Asked::Value(v) => {
                content.insert(name.clone(), v);
            }
            Asked::Skipped => {}
            Asked::Ended => return Ok(None),
        }
    }
    Ok(Some(content))
}

/// What asking for one field gave.
enum Asked {
    Value(Value),
    Skipped,
    Ended,
}

/// One field of a form.
struct Field<'a> {
    name: &'a str,
    schema: &'a Value,
    required: bool,
    /// The allowed values and their labels (`enum`, or `oneOf`/`anyOf` of `const`s).
    choices: Vec<(Value, String)>,
}

impl<'a> Field<'a> {
    fn new(name: &'a str, schema: &'a Value, required: bool) -> Self {
        Field {
            name,
            schema,
            required,
            choices: choices(schema),
        }
    }

    fn kind(&self) -> &str {
        self.schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string")
    }

    /// The question: title or name, description, choices, default, and whether required.
    fn question(&self) -> String {
        let label = self
            .schema
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(self.name);
        let mut q = printable(label).into_owned();
        if let Some(d) = self.schema.get("description").and_then(Value::as_str) {
            q.push_str(&format!(" ({})", printable(d)));
        }
        q.push_str(&format!(" [{}", self.kind()));
        if let Some(d) = self.schema.get("default") {
            q.push_str(&format!(", default {d}"));
        } else if !self.required {
            q.push_str(", optional");
        }
        q.push(']');
        q
    }

    fn ask(&self, input: &mut impl BufRead, out: &mut impl Write) -> io::Result<Asked> {
        if !self.choices.is_empty() {
            writeln!(out, "  {}:", printable(self.name))?;
            for (i, (_, label)) in self.choices.iter().enumerate() {
                writeln!(out, "    {}) {}", i + 1, printable(label))?;
            }
        }
        loop {
            let Some(line) = read_answer(input, out, &self.question())? else {
                return Ok(Asked::Ended);
            };
            if line.is_empty() {
                if let Some(d) = self.schema.get("default") {
                    return Ok(Asked::Value(d.clone()));
                }
                if !self.required {
                    return Ok(Asked::Skipped);
                }
                writeln!(out, "  {} is required", printable(self.name))?;
                continue;
            }
            match self.parse(&line) {
                Ok(v) => return Ok(Asked::Value(v)),
                Err(why) => writeln!(out, "  {why}")?,
            }
        }
    }

    /// The typed value of an answer, checked against the field's schema.
    fn parse(&self, line: &str) -> Result<Value, String> {
        if self.kind() == "array" {
            let items: Vec<&str> = line.split(',').map(str::trim).collect();
            let values = items
                .iter()
                .map(|i| self.choose(i))
                .collect::<Result<Vec<_>, _>>()?;
            return check_count(self.schema, values);
        }
        let value = match self.kind() {
            "boolean" => match line.to_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err("answer yes or no".into()),
            },
            "integer" => line
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "not a whole number".to_owned())?,
            "number" => line
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| "not a number".to_owned())?,
            _ if !self.choices.is_empty() => self.choose(line)?,
            _ => Value::String(line.to_owned()),
        };
        check(self.schema, &value)?;
        Ok(value)
    }

    /// A choice, by its number or its value.
    fn choose(&self, answer: &str) -> Result<Value, String> {
        if let Ok(n) = answer.parse::<usize>()
            && let Some((v, _)) = n.checked_sub(1).and_then(|i| self.choices.get(i))
        {
            return Ok(v.clone());
        }
        self.choices
            .iter()
            .find(|(v, label)| v.as_str() == Some(answer) || label == answer)
            .map(|(v, _)| v.clone())
            .ok_or_else(|| format!("choose 1 to {}", self.choices.len()))
    }
}

/// The allowed values of a field and their labels: `enum` (with `enumNames`), `oneOf` or
/// `anyOf` of `{const, title}`, or the same under `items` for an array.
fn choices(schema: &Value) -> Vec<(Value, String)> {
    let schema = match schema.get("type").and_then(Value::as_str) {
        Some("array") => schema.get("items").unwrap_or(&Value::Null),
        _ => schema,
    };
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let label = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| label_of(v));
                (v.clone(), label)
            })
            .collect();
    }
    let options = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array);
    options
        .into_iter()
        .flatten()
        .filter_map(|o| {
            let v = o.get("const")?;
            let label = o
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| label_of(v));
            Some((v.clone(), label))
        })
        .collect()
}

fn label_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Checks a scalar against `minimum`/`maximum` and `minLength`/`maxLength`.
fn check(schema: &Value, value: &Value) -> Result<(), String> {
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if let Some(min) = bound("minimum").filter(|m| n < *m) {
            return Err(format!("at least {min}"));
        }
        if let Some(max) = bound("maximum").filter(|m| n > *m) {
            return Err(format!("at most {max}"));
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as f64;
        if let Some(min) = bound("minLength").filter(|m| len < *m) {
            return Err(format!("at least {min} characters"));
        }
        if let Some(max) = bound("maxLength").filter(|m| len > *m) {
            return Err(format!("at most {max} characters"));
        }
    }
    Ok(())
}

/// Checks an array's length against `minItems`/`maxItems`.
fn check_count(schema: &Value, values: Vec<Value>) -> Result<Value, String> {
    let n = values.len() as u64;
    if let Some(min) = schema
        .get("minItems")
        .and_then(Value::as_u64)
        .filter(|m| n < *m)
    {
        return Err(format!("choose at least {min}"));
    }
    if let Some(max) = schema
        .get("maxItems")
        .and_then(Value::as_u64)
        .filter(|m| n > *m)
    {
        return Err(format!("choose at most {max}"));
    }
    Ok(Value::Array(values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(params: Value, typed: &str) -> (ElicitResult, String) {
        let params: ElicitParams = serde_json::from_value(params).expect("params");
        let mut out = Vec::new();
        let r = ask(&params, &mut typed.as_bytes(), &mut out).expect("asked");
        (r, String::from_utf8(out).expect("utf-8"))
    }

    fn form(schema: Value) -> Value {
        json!({"message": "Tell me", "requestedSchema": schema})
    }

    #[test]
    fn a_form_is_typed_validated_and_defaulted() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2},
            "age": {"type": "integer", "minimum": 0},
            "ratio": {"type": "number", "default": 0.5},
            "ok": {"type": "boolean"},
            "color": {"type": "string", "enum": ["red", "green"]},
            "note": {"type": "string"}
        }, "required": ["name", "age", "ok", "color"]});
        // Fields come in name order (JSON objects here are sorted). y; age not a number,
        // negative, then 42; color by number; name too short then fine; note skipped; ok
        // yes; ratio its default.
        let typed = "y\nold\n-1\n42\n2\nA\nAda\n\nyes\n\n";
        let (r, out) = run(form(schema), typed);
        assert_eq!(r.action, ElicitAction::Accept);
        assert_eq!(
            Value::Object(r.content.expect("content")),
            json!({"name": "Ada", "age": 42, "ratio": 0.5, "ok": true, "color": "green"})
        );
        assert!(out.contains("The server asks: Tell me"), "{out}");
        assert!(out.contains("at least 2 characters"), "{out}");
        assert!(out.contains("not a whole number"), "{out}");
        assert!(out.contains("at least 0"), "{out}");
        assert!(out.contains("2) green"), "{out}");
    }

    #[test]
    fn required_fields_are_asked_again_and_choices_by_value_or_title() {
        let schema = json!({"type": "object", "properties": {
            "size": {"type": "string", "oneOf": [
                {"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}
        }, "required": ["size"]});
        let (r, out) = run(form(schema), "\n\nhuge\nLarge\na, 3\n");
        assert_eq!(r.action, ElicitAction::Accept);
        assert_eq!(
            Value::Object(r.content.expect("content")),
            json!({"size": "l", "tags": ["a", "c"]})
        );
        assert!(out.contains("size is required"), "{out}");
        assert!(out.contains("choose 1 to 2"), "{out}");
    }

    #[test]
    fn decline_cancel_and_end_of_input() {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        let (r, _) = run(form(schema.clone()), "n\n");
        assert_eq!((r.action, r.content), (ElicitAction::Decline, None));
        let (r, _) = run(form(schema.clone()), "c\n");
        assert_eq!(r.action, ElicitAction::Cancel);
        let (r, _) = run(form(schema.clone()), "");
        assert_eq!(r.action, ElicitAction::Cancel);
        // The input ends in the middle of the form: cancelled, nothing sent.
        let (r, _) = run(form(schema), "y\n");
        assert_eq!((r.action, r.content), (ElicitAction::Cancel, None));
    }

    #[test]
    fn url_mode_shows_the_url_and_asks_for_consent() {
        let params = json!({"mode": "url", "message": "Log in", "url": "https://example.com/x",
                            "elicitationId": "e1"});
        let (r, out) = run(params.clone(), "maybe\ny\n");
        assert_eq!((r.action, r.content), (ElicitAction::Accept, None));
        assert!(out.contains("https://example.com/x"), "{out}");
        assert!(out.contains("please answer y, n or c"), "{out}");
        let (r, _) = run(params.clone(), "n\n");
        assert_eq!(r.action, ElicitAction::Decline);
        // No default for URL consent: an empty answer is asked again, end of input cancels.
        let (r, _) = run(params, "\n");
        assert_eq!(r.action, ElicitAction::Cancel);
    }

    #[test]
    fn control_characters_from_the_server_are_escaped() {
        let (_, out) = run(
            json!({"message": "hi\u{1b}[2J", "requestedSchema": {}}),
            "c\n",
        );
        assert!(!out.contains('\u{1b}'), "{out:?}");
    }
}
