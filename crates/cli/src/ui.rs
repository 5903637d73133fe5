//! What the user sees while a command runs: progress on stderr, results on stdout.

use anyhow::Result;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when a result file goes to standard output (`--json -`): the text meant for stdout goes
/// to stderr then, so that stdout holds the file alone (`irqlab host --json - | jq`).
static STDOUT_IS_A_RESULT: AtomicBool = AtomicBool::new(false);

/// A result file will be written to standard output: [`print()`] writes to stderr from now on.
pub fn stdout_is_a_result() {
    STDOUT_IS_A_RESULT.store(true, Ordering::Relaxed);
}

/// Write to stdout, flushed (a closed pipe is an error the caller ends on quietly); to stderr
/// when stdout carries a result file ([`stdout_is_a_result`]).
pub fn print(s: &str) -> Result<()> {
    if STDOUT_IS_A_RESULT.load(Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        err.write_all(s.as_bytes())?;
        err.flush()?;
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(())
}
/// `text` with each control character (C0, DEL, C1) as `\xNN` or `\u{NNNN}`: a name someone
/// else chose (a file in a shared directory) is shown in a message, never obeyed by the
/// terminal (an escape sequence) or taken for a line of irqlab's own.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, false)
}

/// [`escape_controls`] but for newlines and tabs: for a whole message, whose lines are its own
/// and may quote what a file held (a JSON parser names the field it did not expect).
pub fn escape_controls_but_lines(text: &str) -> std::borrow::Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> std::borrow::Cow<'_, str> {
    let odd = |c: char| c.is_control() && !(keep_lines && (c == '\n' || c == '\t'));
    if !text.chars().any(odd) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !odd(c) => out.push(c),
            c if u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02X}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:04X}}}", u32::from(c))),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A note on how a result was made, on stderr (results go to stdout).
pub fn note(text: &str) {
    let text = escape_controls_but_lines(text);
    let _ = writeln!(std::io::stderr(), "irqlab: note: {text}");
}

/// A warning on stderr: something limited the result.
pub fn warning(text: &str) {
    let text = escape_controls_but_lines(text);
    let _ = writeln!(std::io::stderr(), "irqlab: warning: {text}");
}

/// Say where each file went (stderr: the files are the result, the list is not).
pub fn wrote(files: &[std::path::PathBuf]) {
    for f in files.iter().filter(|f| !irqlab_report::is_stdout(f)) {
        let _ = writeln!(std::io::stderr(), "irqlab: wrote {}", f.display());
    }
}

/// A progress bar with the time left for long simulations, on stderr when it is a terminal
/// (quiet otherwise, and for runs too short to need one).
pub struct Progress {
    done: Option<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        std::thread::JoinHandle<()>,
    )>,
}

impl Progress {
    /// Runs shorter than this many samples finish before a bar would be useful.
    const MIN_SAMPLES: u64 = 2_000_000;

    pub fn start(total: u64, counter: &std::sync::Arc<std::sync::atomic::AtomicU64>) -> Progress {
        use std::io::IsTerminal;
        if total < Self::MIN_SAMPLES || !std::io::stderr().is_terminal() {
            return Progress { done: None };
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (stop2, counter) = (stop.clone(), counter.clone());
        let h = std::thread::spawn(move || {
            let bar = indicatif::ProgressBar::new(total);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:24} {human_pos}/{human_len} interrupts, ~{eta} left",
                )
                .expect("a valid template"),
            );
            while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
                bar.set_position(
                    counter
                        .load(std::sync::atomic::Ordering::Relaxed)
                        .min(total),
                );
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            bar.finish_and_clear();
        });
        Progress {
            done: Some((stop, h)),
        }
    }

    pub fn finish(self) {
        if let Some((stop, h)) = self.done {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            let _ = h.join();
        }
    }
}

/// cyclictest's per-thread status lines on stderr, redrawn in place while a measurement runs;
/// nothing when stderr is not a terminal.
pub struct LiveLines {
    tty: bool,
    drawn: usize,
}

impl LiveLines {
    /// Lines shown when `enabled` (not `--quiet`) and stderr is a terminal.
    pub fn new(enabled: bool) -> Self {
        use std::io::IsTerminal;
        LiveLines {
            tty: enabled && std::io::stderr().is_terminal(),
            drawn: 0,
        }
    }

    pub fn show(&mut self, stats: &[irqlab_host::timer::LiveStat]) {
        if !self.tty {
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.drawn > 0 {
            let _ = write!(err, "\x1b[{}A", self.drawn);
        }
        for (i, s) in stats.iter().enumerate() {
            let _ = writeln!(err, "\x1b[2K{}", s.cyclictest_line(i));
        }
        self.drawn = stats.len();
    }

    pub fn finish(&mut self) {
        if self.tty && self.drawn > 0 {
            let _ = writeln!(std::io::stderr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(escape_controls("shard-0.json"), "shard-0.json");
        assert_eq!(
            escape_controls("a\x1b[2Jb\nc\td\u{7f}e\u{9b}f\u{e9}"),
            "a\\x1B[2Jb\\x0Ac\\x09d\\x7Fe\\u{009B}f\u{e9}"
        );
        assert_eq!(
            escape_controls_but_lines("line 1\n\tline 2\x1b]0;title\x07"),
            "line 1\n\tline 2\\x1B]0;title\\x07"
        );
    }
}
