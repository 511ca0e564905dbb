//! An incremental parser for `text/event-stream` (the WHATWG event-stream format).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// `event:` (empty means `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// `id:` of this event, if it set one.
    pub id: Option<String>,
    /// `retry:` in milliseconds, if the event carried one.
    pub retry: Option<u64>,
}

/// Feeds bytes in, takes events out. Lines and events are size-limited.
#[derive(Debug)]
pub struct SseParser {
    buf: Vec<u8>,
    current: SseEvent,
    has_data: bool,
    max_event: usize,
    overflow: bool,
}

impl SseParser {
    /// A parser refusing events larger than `max_event` bytes (they are skipped).
    pub fn new(max_event: usize) -> Self {
        Self {
            buf: Vec::new(),
            current: SseEvent::default(),
            has_data: false,
            max_event,
            overflow: false,
        }
    }

    /// Adds bytes; returns the events they complete. An event with an `id` or `retry` but no
    /// data is returned too (a priming event), with empty `data`.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        // Lines end with CRLF, LF or a lone CR. A CR at the very end of the buffer waits for
        // the next chunk, which may start with its LF.
        while let Some(pos) = self.buf[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + pos;
            let next = match self.buf[end] {
                b'\r' => match self.buf.get(end + 1) {
                    Some(b'\n') => end + 2,
                    Some(_) => end + 1,
                    None => break,
                },
                _ => end + 1,
            };
            let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
            start = next;
            self.line(&line, &mut out);
        }
        self.buf.drain(..start);
        if self.buf.len() > self.max_event {
            // A line longer than any event may be: drop it and everything up to its end.
            self.buf.clear();
            self.overflow = true;
        }
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            let event = std::mem::take(&mut self.current);
            let had = std::mem::replace(&mut self.has_data, false);
            if std::mem::replace(&mut self.overflow, false) {
                return;
            }
            if had || event.id.is_some() || event.retry.is_some() {
                out.push(event);
            }
            return;
        }
        if line.starts_with(':') {
            return; // comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
                if self.current.data.len() > self.max_event {
                    self.overflow = true;
                    self.current.data.clear();
                }
            }
            "event" => self.current.event = value.to_owned(),
            "id" if !value.contains('\0') => self.current.id = Some(value.to_owned()),
            "retry" => self.current.retry = value.parse().ok(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_split_events() {
        let mut p = SseParser::new(1024);
        assert!(
            p.push(b"id: a-0\nretry: 500\ndata: \n\n: keep-alive\n\nid: a-1\nevent: mess")
                .len()
                == 1
        );
        let ev = p.push(b"age\ndata: {\"x\":\r\ndata: 1}\r\n\r\n");
        assert_eq!(
            ev,
            vec![SseEvent {
                event: "message".into(),
                data: "{\"x\":\n1}".into(),
                id: Some("a-1".into()),
                retry: None
            }]
        );
        let mut p = SseParser::new(8);
        assert!(
            p.push(b"data: 0123456789abcdef\n\ndata: ok\n\n")
                .iter()
                .map(|e| e.data.clone())
                .eq(["ok".to_owned()])
        );
    }

    #[test]
    fn cr_lf_and_crlf_line_endings_in_any_chunking() {
        let text = b"data: a\r\rdata: b\n\ndata: c\r\n\r\n";
        let whole: Vec<String> = SseParser::new(64)
            .push(text)
            .into_iter()
            .map(|e| e.data)
            .collect();
        assert_eq!(whole, ["a", "b", "c"]);
        for split in 0..text.len() {
            let mut p = SseParser::new(64);
            let mut got: Vec<String> = p.push(&text[..split]).into_iter().map(|e| e.data).collect();
            got.extend(p.push(&text[split..]).into_iter().map(|e| e.data));
            assert_eq!(got, whole, "split at {split}");
        }
    }

    #[test]
    fn priming_event_has_id_and_retry() {
        let mut p = SseParser::new(1024);
        let ev = p.push(b"id: t-0\nretry: 500\ndata: \n\n");
        assert_eq!(ev[0].id.as_deref(), Some("t-0"));
        assert_eq!(ev[0].retry, Some(500));
        assert_eq!(ev[0].data, "");
    }
}
