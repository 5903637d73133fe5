//! The README's examples cannot drift from what the tool prints: every ```` ```console ````
//! block in `README.md` is run and its output compared.
//!
//! - `$ irqlab ARGS` (or `$ cargo run --release -- ARGS`) runs this build's `irqlab` in a fresh
//!   directory that holds the repository's `experiments`, `platforms`, `kernels` and `crates`
//!   (as a checkout does), so files an example writes go nowhere else. `$ sudo irqlab ...` needs
//!   root and is skipped, with the reason printed, without it. `# exit N` after a command's
//!   output states a non-zero exit status.
//! - Expected lines are stdout, in order; lines starting with `irqlab: ` are stderr, in order.
//!   `[..]` in a line matches any text; a line `...` matches any number of lines.
//! - `IRQLAB_README=update cargo test --test readme` rewrites the output of every block without
//!   wildcards from a fresh run (then read the diff).

mod hostenv;

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// One command of a console block and what it should print.
#[derive(Debug)]
struct Example {
    /// Line of the `$` in README.md (1-based).
    line: usize,
    command: String,
    expected: Vec<String>,
    /// Line range of `expected` in README.md (0-based, end exclusive), for updates.
    span: (usize, usize),
    exit: i32,
}

/// The examples of every ```console block.
fn examples(readme: &str) -> Vec<Example> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() != "```console" {
            i += 1;
            continue;
        }
        i += 1;
        let mut current: Option<Example> = None;
        while i < lines.len() && lines[i].trim_end() != "```" {
            let l = lines[i];
            if let Some(cmd) = l.strip_prefix("$ ") {
                out.extend(current.take());
                current = Some(Example {
                    line: i + 1,
                    command: cmd.to_string(),
                    expected: Vec::new(),
                    span: (i + 1, i + 1),
                    exit: 0,
                });
            } else if let Some(code) = l.strip_prefix("# exit ") {
                let e = current.as_mut().expect("`# exit` follows a command");
                e.exit = code.trim().parse().expect("# exit N");
            } else {
                let e = current
                    .as_mut()
                    .unwrap_or_else(|| panic!("README.md:{}: output before a `$` command", i + 1));
                e.expected.push(l.to_string());
                e.span.1 = i + 1;
            }
            i += 1;
        }
        out.extend(current.take());
        i += 1;
    }
    out
}

/// Does `line` match `pattern`, whose `[..]` match any text?
fn line_matches(pattern: &str, line: &str) -> bool {
    let (pattern, line) = (pattern.trim_end(), line.trim_end());
    let parts: Vec<&str> = pattern.split("[..]").collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let mut rest = match line.strip_prefix(parts[0]) {
        Some(r) => r,
        None => return false,
    };
    for (k, p) in parts.iter().enumerate().skip(1) {
        if k == parts.len() - 1 {
            return rest.ends_with(p);
        }
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    true
}

/// Do `lines` match `patterns` (with `...` lines matching any number of lines)?
fn lines_match(patterns: &[String], lines: &[&str]) -> bool {
    match patterns.split_first() {
        None => lines.is_empty(),
        Some((p, rest)) if p.trim() == "..." => {
            (0..=lines.len()).any(|skip| lines_match(rest, &lines[skip..]))
        }
        Some((p, rest)) => {
            !lines.is_empty() && line_matches(p, lines[0]) && lines_match(rest, &lines[1..])
        }
    }
}

/// A directory that looks like a checkout for the examples' relative paths.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in ["experiments", "platforms", "kernels", "crates"] {
        std::os::unix::fs::symlink(repo_root().join(d), dir.path().join(d)).unwrap();
    }
    dir
}

/// Split a command line into words: whitespace separates, single and double quotes group.
fn words(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in cmd.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The irqlab arguments of an example's command, and whether it needs root.
fn irqlab_args(e: &Example) -> (Vec<String>, bool) {
    let mut w = words(&e.command);
    let root = w.first().map(String::as_str) == Some("sudo");
    if root {
        w.remove(0);
    }
    let args = match w.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["irqlab", ..] => w[1..].to_vec(),
        ["cargo", "run", "--release", "--", ..] => w[4..].to_vec(),
        _ => panic!(
            "README.md:{}: a console block runs irqlab only (irqlab ... or cargo run --release \
             -- ...); `{}` is not checked: put it in a ```sh block",
            e.line, e.command
        ),
    };
    (args, root)
}

#[test]
fn readme_examples_print_what_the_readme_shows() {
    let path = repo_root().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let examples = examples(&readme);
    assert!(examples.len() >= 5, "the README's examples are found");
    let update = std::env::var("IRQLAB_README").is_ok_and(|v| v == "update");
    let mut lines: Vec<String> = readme.lines().map(str::to_string).collect();
    let mut problems = Vec::new();
    // Later spans first, so that replacing one keeps the earlier ones' line numbers.
    for e in examples.iter().rev() {
        let (args, root) = irqlab_args(e);
        if root && !hostenv::is_root() {
            eprintln!("README.md:{}: `{}` skipped: not root", e.line, e.command);
            continue;
        }
        let dir = workdir();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_irqlab"))
            .current_dir(dir.path())
            .args(&args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let got_out: Vec<&str> = stdout.lines().collect();
        let got_err: Vec<&str> = stderr.lines().collect();
        let (want_err, want_out): (Vec<String>, Vec<String>) = e
            .expected
            .iter()
            .cloned()
            .partition(|l| l.starts_with("irqlab: "));
        let status = out.status.code().unwrap_or(-1);
        let ok = status == e.exit
            && lines_match(&want_out, &got_out)
            && (want_err.is_empty() || lines_match(&want_err, &got_err));
        if ok {
            continue;
        }
        let wildcards = e
            .expected
            .iter()
            .any(|l| l.contains("[..]") || l.trim() == "...");
        if update && !wildcards && status == e.exit {
            let mut new: Vec<String> = got_out.iter().map(|l| l.trim_end().to_string()).collect();
            new.extend(
                got_err
                    .iter()
                    .filter(|l| l.starts_with("irqlab: "))
                    .map(|l| l.to_string()),
            );
            lines.splice(e.span.0..e.span.1, new);
            continue;
        }
        problems.push(format!(
            "README.md:{}: `{}` (exit {status}, README says {}):\n--- README\n{}\n--- stdout\n{}\n--- stderr\n{}",
            e.line,
            e.command,
            e.exit,
            e.expected.join("\n"),
            stdout,
            stderr
        ));
    }
    if update {
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }
    assert!(
        problems.is_empty(),
        "{}\n\n(IRQLAB_README=update cargo test --test readme rewrites blocks without wildcards)",
        problems.join("\n\n")
    );
}

/// The numbers the README's prose quotes from `irqlab validate` are the example's, which the
/// test above holds to what the tool prints: the row counts ("16 of 33 rows pass, 15 fail, 2
/// undecided", however the sentence words them) and each discussed row's simulated value
/// ("- **msi-ws-xtpic (8.02x against 6.8x).**").
#[test]
fn the_prose_quotes_what_validate_prints() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    // Measured figures are filled in, never left as placeholders (FIG_..., TODO, XXX).
    for word in readme.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        assert!(
            !(word.starts_with("FIG_") || word == "TODO" || word == "XXX"),
            "README.md holds the placeholder {word}"
        );
    }
    let validate = examples(&readme)
        .into_iter()
        .find(|e| e.command == "irqlab validate")
        .expect("the README shows `$ irqlab validate`");
    let number =
        |w: &str| -> Option<u64> { w.trim_matches(|c: char| !c.is_ascii_digit()).parse().ok() };
    // (passed, total, failed, undecided) from the text around one " rows pass", when the words
    // before it are a count (`N of M`, `N of the M`; "Seed 001's two routing rows pass" is not).
    let counts = |before: &str, after: &str| -> Option<(u64, u64, Option<u64>, Option<u64>)> {
        let words: Vec<&str> = before.split_whitespace().rev().take(4).collect();
        let (total, passed) = match words.as_slice() {
            [m, "the", "of", n, ..] | [m, "of", n, ..] => (number(m)?, number(n)?),
            _ => return None,
        };
        let after: Vec<&str> = after.split_whitespace().take(8).collect();
        let before_word = |word: &str| {
            after
                .iter()
                .position(|w| w.trim_matches(|c: char| !c.is_alphabetic()) == word)
                .and_then(|i| {
                    let k = if i >= 2 && after[i - 1] == "are" {
                        i - 2
                    } else {
                        i.checked_sub(1)?
                    };
                    number(after[k])
                })
        };
        Some((passed, total, before_word("fail"), before_word("undecided")))
    };
    let summary = validate
        .expected
        .iter()
        .find_map(|l| l.split_once(" rows pass").and_then(|(b, a)| counts(b, a)))
        .expect("the validate example ends with its summary line");
    let mut claims = 0;
    // Sentences wrap: search the text with its lines joined.
    let flat = readme.replace('\n', " ");
    let boundary = |i: usize| {
        (0..=i.min(flat.len()))
            .rev()
            .find(|&k| flat.is_char_boundary(k))
            .unwrap()
    };
    for (at, _) in flat.match_indices(" rows pass") {
        let before = &flat[boundary(at.saturating_sub(40))..at];
        let after = &flat[at + " rows pass".len()..boundary(at + 80)];
        let Some((passed, total, failed, undecided)) = counts(before, after) else {
            continue;
        };
        assert_eq!(
            (passed, total),
            (summary.0, summary.1),
            "README.md: {before} rows pass{after}"
        );
        for (got, want) in [(failed, summary.2), (undecided, summary.3)] {
            if got.is_some() {
                assert_eq!(got, want, "README.md: {before} rows pass{after}");
            }
        }
        claims += 1;
    }
    assert!(
        claims >= 3,
        "the first screen, the example and where the model stands"
    );
    // The discussed rows: their simulated value, as the example's table prints it.
    let mut rows = 0;
    for line in readme.lines() {
        let Some(rest) = line.strip_prefix("- **") else {
            continue;
        };
        let Some((id, rest)) = rest.split_once(" (") else {
            continue;
        };
        let Some((simulated, _)) = rest.split_once(" against ") else {
            continue;
        };
        let row = validate
            .expected
            .iter()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap_or_else(|| panic!("README.md discusses {id}, which the example has no row of"));
        assert!(
            row.contains(&simulated.replace('\u{b5}', "u")),
            "README.md says {id} simulates {simulated}; the example's row:\n{row}"
        );
        rows += 1;
    }
    assert!(rows >= 4, "the failing rows are discussed");
}

#[test]
fn the_matcher_matches_what_it_should_and_nothing_else() {
    let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(line_matches("a [..] c", "a bbb c"));
    assert!(line_matches("kernel: [..]", "kernel: 6.1"));
    assert!(!line_matches("kernel: [..]", "kernels: 6.1"));
    assert!(!line_matches("a [..] c", "a bbb d"));
    assert!(line_matches("x  ", "x"));
    assert!(lines_match(&p(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(lines_match(&p(&["a", "...", "d"]), &["a", "d"]));
    assert!(!lines_match(&p(&["a", "...", "d"]), &["a", "b"]));
    assert!(!lines_match(&p(&["a"]), &["a", "b"]));
    assert_eq!(
        words(r#"irqlab sim x --set 'a=[1, 2]' --load "stress-ng --cpu 1""#),
        [
            "irqlab",
            "sim",
            "x",
            "--set",
            "a=[1, 2]",
            "--load",
            "stress-ng --cpu 1"
        ]
    );
    let md = "text\n```console\n$ irqlab list\nout 1\nirqlab: note: x\n$ irqlab validate\n# exit 1\n```\n";
    let ex = examples(md);
    assert_eq!(ex.len(), 2);
    assert_eq!(ex[0].expected, ["out 1", "irqlab: note: x"]);
    assert_eq!(ex[0].span, (3, 5));
    assert_eq!(ex[1].exit, 1);
    let _ = Path::new(".");
}
