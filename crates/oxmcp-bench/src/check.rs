//! What every answer must hold, and the count of those that did not.

use std::collections::BTreeMap;
use std::time::Duration;

use oxmcp_types::JsonObject;
use serde_json::Value;

/// What the result of every `tools/call` must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// Its text is the message the call sent (`echo` with a `message` argument).
    Echo,
    /// Its text is exactly this.
    Text(String),
    /// Any result that is not `isError`.
    AnyResult,
}

impl Expect {
    /// `--expect TEXT`, else the message for `echo` called with a string `message`, else any
    /// result.
    pub(crate) fn choose(expect: Option<String>, tool: &str, payload: &Payload) -> Expect {
        match expect {
            Some(text) => Expect::Text(text),
            None if tool == "echo" && payload.base.is_some() => Expect::Echo,
            None => Expect::AnyResult,
        }
    }

    /// One line saying what is checked.
    pub(crate) fn describe(&self, payload: &Payload) -> String {
        let base = payload.base.as_deref().unwrap_or_default();
        let varied = if payload.base.is_some() {
            format!(" (each call sends message \"{base}-<n>\")")
        } else {
            String::new()
        };
        match self {
            Expect::Echo => {
                format!("id, and the result's text equals the message sent{varied}")
            }
            Expect::Text(t) => format!("id, and the result's text equals {t:?}{varied}"),
            Expect::AnyResult => format!("id, and a result without isError{varied}"),
        }
    }

    /// Checks a tool result: not `isError`, and the text (its text items joined) as expected.
    /// `sent` is the message the call sent, if any.
    pub(crate) fn check<'a>(
        &self,
        sent: Option<&str>,
        is_error: bool,
        texts: impl Iterator<Item = &'a str>,
    ) -> Result<(), Failure> {
        if is_error {
            let text: String = texts.collect();
            return Err(Failure::IsError(clip(&text)));
        }
        let want = match self {
            Expect::AnyResult => return Ok(()),
            Expect::Echo => sent.unwrap_or_default(),
            Expect::Text(t) => t.as_str(),
        };
        let got: String = texts.collect();
        if got == want {
            Ok(())
        } else {
            Err(Failure::Wrong(format!(
                "text {}, expected {}",
                clip(&got),
                clip(want)
            )))
        }
    }
}

/// A string for an error message, cut at 60 characters.
pub(crate) fn clip(s: &str) -> String {
    match s.char_indices().nth(60) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// The arguments of each call: the given ones, with a string `message` made unique per call
/// (`<message>-<n>`), so that a wrong or stale answer cannot pass.
#[derive(Debug, Clone)]
pub(crate) struct Payload {
    pub(crate) args: JsonObject,
    /// The given `message`, when it is a string.
    pub(crate) base: Option<String>,
}

impl Payload {
    pub(crate) fn new(args: JsonObject) -> Payload {
        let base = args
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Payload { args, base }
    }

    /// The message of call `n`, if calls carry one.
    pub(crate) fn message(&self, n: u64) -> Option<String> {
        self.base.as_ref().map(|b| format!("{b}-{n}"))
    }

    /// The arguments of call `n` and its message.
    pub(crate) fn arguments(&self, n: u64) -> (JsonObject, Option<String>) {
        let mut args = self.args.clone();
        let message = self.message(n);
        if let Some(m) = &message {
            args.insert("message".to_owned(), Value::String(m.clone()));
        }
        (args, message)
    }
}

/// Why an answer did not count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// An HTTP status other than the one expected, with the JSON-RPC error message if any.
    Http(u16, String),
    /// A JSON-RPC error response.
    Rpc(i64, String),
    /// A gRPC stream ended with a status other than OK (the code, its message).
    Grpc(u32, String),
    /// An answer that is not the right one: wrong id, wrong text, malformed.
    Wrong(String),
    /// A tool result with `isError: true` (its text).
    IsError(String),
    /// No answer: connection refused or lost, I/O error.
    Transport(String),
    /// No answer in time.
    Timeout,
}

impl Failure {
    /// The group this failure is counted in.
    fn kind(&self) -> String {
        match self {
            Failure::Http(s, _) => format!("http {s}"),
            Failure::Rpc(c, _) => format!("rpc {c}"),
            Failure::Grpc(c, _) => format!("grpc {c}"),
            Failure::Wrong(_) => "wrong answer".to_owned(),
            Failure::IsError(_) => "isError".to_owned(),
            Failure::Transport(_) => "transport".to_owned(),
            Failure::Timeout => "timeout".to_owned(),
        }
    }

    /// Its group and what it says, for an error message.
    pub(crate) fn describe(&self) -> String {
        format!("{}: {}", self.kind(), self.detail())
    }

    fn detail(&self) -> String {
        match self {
            Failure::Http(_, m)
            | Failure::Rpc(_, m)
            | Failure::Grpc(_, m)
            | Failure::Wrong(m)
            | Failure::IsError(m)
            | Failure::Transport(m) => m.clone(),
            Failure::Timeout => "no answer in time".to_owned(),
        }
    }
}

/// Answers of one phase: the good ones with their latency, the others by kind.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) ok: u64,
    pub(crate) latencies: Vec<Duration>,
    /// Failures by kind, with the first one's detail.
    pub(crate) failures: BTreeMap<String, (u64, String)>,
}

impl Tally {
    pub(crate) fn record(&mut self, outcome: Result<(), Failure>, latency: Duration) {
        match outcome {
            Ok(()) => {
                self.ok += 1;
                self.latencies.push(latency);
            }
            Err(f) => {
                let entry = self.failures.entry(f.kind()).or_insert((0, f.detail()));
                entry.0 += 1;
            }
        }
    }

    pub(crate) fn merge(&mut self, other: Tally) {
        self.ok += other.ok;
        self.latencies.extend(other.latencies);
        for (kind, (n, detail)) in other.failures {
            self.failures.entry(kind).or_insert((0, detail)).0 += n;
        }
    }

    pub(crate) fn errors(&self) -> u64 {
        self.failures.values().map(|(n, _)| n).sum()
    }

    /// Answers checked, good or not.
    pub(crate) fn total(&self) -> u64 {
        self.ok + self.errors()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(v: Value) -> Payload {
        Payload::new(v.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn echo_checks_the_message_of_each_call() {
        let p = payload(json!({"message": "hello", "n": 1}));
        let e = Expect::choose(None, "echo", &p);
        assert_eq!(e, Expect::Echo);
        let (args, sent) = p.arguments(7);
        assert_eq!(args["message"], "hello-7");
        assert_eq!(args["n"], 1);
        assert_eq!(
            e.check(sent.as_deref(), false, ["hello-7"].into_iter()),
            Ok(())
        );
        assert_eq!(
            e.check(sent.as_deref(), false, ["hel", "lo-7"].into_iter()),
            Ok(())
        );
        assert!(matches!(
            e.check(sent.as_deref(), false, ["hello-6"].into_iter()),
            Err(Failure::Wrong(_))
        ));
        assert!(matches!(
            e.check(sent.as_deref(), true, ["hello-7"].into_iter()),
            Err(Failure::IsError(_))
        ));
    }

    #[test]
    fn other_tools_need_a_result_or_the_given_text() {
        let p = payload(json!({}));
        assert_eq!(p.message(3), None);
        let any = Expect::choose(None, "add", &p);
        assert_eq!(any, Expect::AnyResult);
        assert_eq!(any.check(None, false, std::iter::empty()), Ok(()));
        assert!(any.check(None, true, std::iter::empty()).is_err());
        let fixed = Expect::choose(
            Some("hello".into()),
            "echo",
            &payload(json!({"message": "x"})),
        );
        assert_eq!(
            fixed.check(Some("x-1"), false, ["hello"].into_iter()),
            Ok(())
        );
        assert!(
            fixed
                .check(Some("x-1"), false, ["x-1"].into_iter())
                .is_err()
        );
    }

    #[test]
    fn tally_groups_failures_by_kind() {
        let mut t = Tally::default();
        t.record(Ok(()), Duration::from_millis(1));
        t.record(Err(Failure::Http(429, "busy".into())), Duration::ZERO);
        let mut u = Tally::default();
        u.record(Err(Failure::Http(429, "later".into())), Duration::ZERO);
        u.record(Err(Failure::Timeout), Duration::ZERO);
        t.merge(u);
        assert_eq!((t.ok, t.errors(), t.total()), (1, 3, 4));
        assert_eq!(t.failures["http 429"], (2, "busy".to_owned()));
        assert_eq!(t.latencies.len(), 1);
        assert_eq!(clip(&"x".repeat(100)).len(), 65);
    }
}
