//! Progress of a tool call on stderr: a bar on a terminal, plain lines otherwise (scripts and
//! logs get one `progress N/TOTAL message` line per notification).

use std::io::IsTerminal;
use std::sync::Arc;

use parking_lot::Mutex;

use indicatif::{ProgressBar, ProgressStyle};
use oxmcp_types::ProgressParams;

/// Shown as notifications arrive; cheap to clone.
#[derive(Clone)]
pub(crate) struct Bar {
    bar: Option<Arc<Mutex<Option<ProgressBar>>>>,
}

impl Bar {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub(crate) fn new() -> Self {
        Self {
            bar: std::io::stderr()
                .is_terminal()
                .then(|| Arc::new(Mutex::new(None))),
        }
    }

    /// Shows one progress notification.
    pub(crate) fn update(&self, p: &ProgressParams) {
        let Some(slot) = &self.bar else {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let msg = p
                .message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default();
            eprintln!("progress {}{total}{msg}", p.progress);
            return;
        };
        let mut slot = slot.lock();
        let bar = slot.get_or_insert_with(|| {
            let bar = match p.total {
                Some(_) => ProgressBar::new(0),
                None => ProgressBar::new_spinner(),
            };
            let template = if p.total.is_some() {
                "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}"
            } else {
                "{spinner} [{elapsed_precise}] {pos} {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            bar
        });
        // Progress values are numbers that only grow; the bar counts whole steps.
        if let Some(total) = p.total {
            bar.set_length(total.max(0.0).round() as u64);
        }
        bar.set_position(p.progress.max(0.0).round() as u64);
        if let Some(m) = &p.message {
            bar.set_message(m.clone());
        }
    }

    /// Clears the bar (the result follows on stdout).
    pub(crate) fn finish(&self) {
        if let Some(slot) = &self.bar
            && let Some(bar) = slot.lock().take()
        {
            bar.finish_and_clear();
        }
    }
}
