//! The examples cannot drift from what the tool prints: every ```` ```console ```` block in
//! `README.md` and in every `docs/*.md` (not `docs/research/`) is run and its output compared.
//! Every relative link in those files leads to a file that exists, and to a heading of it where
//! the link names an `#anchor`.
//!
//! - `$ irqlab ARGS` (or `$ cargo run --release -- ARGS`) runs this build's `irqlab` in a fresh
//!   directory that holds the repository's `experiments`, `platforms`, `kernels` and `crates`
//!   (as a checkout does), so files an example writes go nowhere else. The commands of one block
//!   share that directory and run in order: a block may write a file with one command (`sim
//!   --json ws.json`) and read it with the next (`plot ws.json`). `$ sudo irqlab ...` needs
//!   root and is skipped, with the reason printed, without it. `# exit N` after a command's
//!   output states a non-zero exit status.
//! - Expected lines are stdout, in order; lines starting with `irqlab: ` are stderr, in order.
//!   `[..]` in a line matches any text; a line `...` matches any number of lines.
//! - `IRQLAB_README=update cargo test -p irqlab --test readme` rewrites the output of every block
//!   without wildcards, in every checked file, from a fresh run (then read the diff).
//! - A failure names the file and the line of the command.

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
    /// Line of the `$` in its file (1-based).
    line: usize,
    command: String,
    expected: Vec<String>,
    /// Line range of `expected` in its file (0-based, end exclusive), for updates.
    span: (usize, usize),
    exit: i32,
    /// Which console block of its file it is in (0-based): a block's commands share a directory.
    block: usize,
}

/// The files whose examples and links are checked, relative to the repository: `README.md`, then
/// every `docs/*.md` in name order.
fn checked_files() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(repo_root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    let mut out = vec!["README.md".to_string()];
    out.extend(docs);
    out
}

/// The examples of every ```console block of `md` (the file `name`, for messages).
fn examples(name: &str, md: &str) -> Vec<Example> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    let mut block = 0;
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
                    block,
                });
            } else if let Some(code) = l.strip_prefix("# exit ") {
                let e = current
                    .as_mut()
                    .unwrap_or_else(|| panic!("{name}:{}: `# exit` follows a command", i + 1));
                e.exit = code.trim().parse().expect("# exit N");
            } else {
                let e = current
                    .as_mut()
                    .unwrap_or_else(|| panic!("{name}:{}: output before a `$` command", i + 1));
                e.expected.push(l.to_string());
                e.span.1 = i + 1;
            }
            i += 1;
        }
        out.extend(current.take());
        block += 1;
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

/// The irqlab arguments of an example's command (in the file `name`), and whether it needs root.
fn irqlab_args(name: &str, e: &Example) -> (Vec<String>, bool) {
    let mut w = words(&e.command);
    let root = w.first().map(String::as_str) == Some("sudo");
    if root {
        w.remove(0);
    }
    let args = match w.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["irqlab", ..] => w[1..].to_vec(),
        ["cargo", "run", "--release", "--", ..] => w[4..].to_vec(),
        _ => panic!(
            "{name}:{}: a console block runs irqlab only (irqlab ... or cargo run --release \
             -- ...); `{}` is not checked: put it in a ```sh block",
            e.line, e.command
        ),
    };
    (args, root)
}

/// Runs the examples of the file `name` (relative to the repository) and returns what differs,
/// each naming the file and line. With `IRQLAB_README=update` it rewrites the blocks without
/// wildcards instead.
fn check_examples(name: &str) -> Vec<String> {
    let path = repo_root().join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let examples = examples(name, &text);
    let update = std::env::var("IRQLAB_README").is_ok_and(|v| v == "update");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut problems = Vec::new();
    // (span, new lines) of the examples the update rewrites.
    let mut updates: Vec<((usize, usize), Vec<String>)> = Vec::new();
    let mut dir: Option<(usize, tempfile::TempDir)> = None;
    for e in &examples {
        let (args, root) = irqlab_args(name, e);
        if root && !hostenv::is_root() {
            eprintln!("{name}:{}: `{}` skipped: not root", e.line, e.command);
            continue;
        }
        if dir.as_ref().is_none_or(|(b, _)| *b != e.block) {
            dir = Some((e.block, workdir()));
        }
        let dir = &dir.as_ref().unwrap().1;
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
            updates.push((e.span, new));
            continue;
        }
        problems.push(format!(
            "{name}:{}: `{}` (exit {status}, {name} says {}):\n--- {name}\n{}\n--- stdout\n{}\n--- stderr\n{}",
            e.line,
            e.command,
            e.exit,
            e.expected.join("\n"),
            stdout,
            stderr
        ));
    }
    if !updates.is_empty() {
        // Later spans first, so that replacing one keeps the earlier ones' line numbers.
        for (span, new) in updates.into_iter().rev() {
            lines.splice(span.0..span.1, new);
        }
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }
    problems
}

fn assert_no_problems(problems: &[String]) {
    assert!(
        problems.is_empty(),
        "{}\n\n(IRQLAB_README=update cargo test -p irqlab --test readme rewrites blocks without \
         wildcards)",
        problems.join("\n\n")
    );
}

/// The README's first command, `cargo run --release -- validate`, names no binary: cargo runs the
/// one binary among the workspace's default members and refuses when there are two ("could not
/// determine which binary to run"), as it did once the fuzz runner (`irqlab-fuzz`) joined the
/// workspace. `cargo metadata` lists what cargo chooses from.
#[test]
fn the_readmes_first_command_has_one_binary_to_run() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo's JSON");
    let defaults = m["workspace_default_members"]
        .as_array()
        .expect("cargo lists the default members");
    let packages = m["packages"].as_array().expect("cargo lists the packages");
    let bins: Vec<&str> = (packages.iter())
        .filter(|p| defaults.contains(&p["id"]))
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .filter(|t| (t["kind"].as_array().into_iter().flatten()).any(|k| k == "bin"))
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        bins,
        ["irqlab"],
        "`cargo run --release -- validate` (README.md) must find one binary among the default members"
    );
}

#[test]
fn readme_examples_print_what_the_readme_shows() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    assert!(
        examples("README.md", &readme).len() >= 5,
        "the README's examples are found"
    );
    assert_no_problems(&check_examples("README.md"));
}

/// Every `docs/*.md`, each example named by its file and line.
#[test]
fn docs_examples_print_what_the_docs_show() {
    let docs: Vec<String> = checked_files()
        .into_iter()
        .filter(|f| f.starts_with("docs/"))
        .collect();
    let guides = [
        "docs/sim.md",
        "docs/validate.md",
        "docs/measure.md",
        "docs/plan.md",
    ];
    for g in guides {
        assert!(docs.iter().any(|d| d == g), "{g} is checked");
    }
    let problems: Vec<String> = docs.iter().flat_map(|d| check_examples(d)).collect();
    assert_no_problems(&problems);
}

/// The numbers the prose of the README and of `docs/validate.md` quotes from `irqlab validate`
/// are the example's in `docs/validate.md`, which the tests above hold to what the tool prints:
/// the row counts ("16 of 33 rows pass, 15 fail, 2 undecided", however the sentence words them)
/// and each discussed row's simulated value ("- **msi-ws-xtpic (8.02x against 6.8x).**").
#[test]
fn the_prose_quotes_what_validate_prints() {
    // Measured figures are filled in, never left as placeholders (FIG_..., TODO, XXX).
    for name in checked_files() {
        let text = std::fs::read_to_string(repo_root().join(&name)).unwrap();
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            assert!(
                !(word.starts_with("FIG_") || word == "TODO" || word == "XXX"),
                "{name} holds the placeholder {word}"
            );
        }
    }
    let guide = std::fs::read_to_string(repo_root().join("docs/validate.md")).unwrap();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let validate = examples("docs/validate.md", &guide)
        .into_iter()
        .find(|e| e.command == "irqlab validate")
        .expect("docs/validate.md shows `$ irqlab validate`");
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
    // Sentences wrap: search the prose with its lines joined. An example's own summary line (a
    // README example of `validate --only`) is not a claim about the whole validation.
    let flat = format!("{}\n{}", prose(&readme), prose(&guide)).replace('\n', " ");
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
            "README.md or docs/validate.md: {before} rows pass{after}"
        );
        for (got, want) in [(failed, summary.2), (undecided, summary.3)] {
            if got.is_some() {
                assert_eq!(
                    got, want,
                    "README.md or docs/validate.md: {before} rows pass{after}"
                );
            }
        }
        claims += 1;
    }
    assert!(
        claims >= 3,
        "the README's first screen and where the model stands, and docs/validate.md's"
    );
    // The discussed rows: their simulated value, as the example's table prints it.
    let mut rows = 0;
    for line in guide.lines() {
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
            .unwrap_or_else(|| {
                panic!("docs/validate.md discusses {id}, which the example has no row of")
            });
        assert!(
            row.contains(&simulated.replace('\u{b5}', "u")),
            "docs/validate.md says {id} simulates {simulated}; the example's row:\n{row}"
        );
        rows += 1;
    }
    assert!(rows >= 4, "the failing rows are discussed");
}

/// `md` without its fenced blocks (their lines left empty).
fn prose(md: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces made `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of `md`'s headings, a repeated one numbered as GitHub numbers it (`x`, `x-1`).
fn anchors(md: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in prose(md).lines() {
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let text = rest.trim_start_matches('#');
        if !text.starts_with(' ') {
            continue;
        }
        // A link in a heading counts by its text.
        let text = text.replace("](", "\u{0}");
        let text: String = text
            .split('\u{0}')
            .enumerate()
            .map(|(k, part)| {
                if k == 0 {
                    part.to_string()
                } else {
                    part.split_once(')')
                        .map_or("", |(_, after)| after)
                        .to_string()
                }
            })
            .collect();
        let base = anchor(&text);
        let mut a = base.clone();
        let mut n = 0;
        while out.contains(&a) {
            n += 1;
            a = format!("{base}-{n}");
        }
        out.push(a);
    }
    out
}

/// The targets of `md`'s inline links `[text](target)`, with their lines (1-based), outside
/// fenced blocks and code spans.
fn links(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(md).lines().enumerate() {
        // Code spans: every other piece between backticks.
        let text: String = line
            .split('`')
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, p)| p)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push((n + 1, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// Every relative link of the README and of `docs/*.md` leads to a file that exists, and an
/// `#anchor` to a heading of its file.
#[test]
fn every_relative_link_leads_somewhere() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for name in checked_files() {
        let path = repo_root().join(&name);
        let text = std::fs::read_to_string(&path).unwrap();
        let dir = path.parent().unwrap().to_path_buf();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            checked += 1;
            if !file.exists() {
                problems.push(format!(
                    "{name}:{line}: ({target}): no file {}",
                    file.display()
                ));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            let target_text = std::fs::read_to_string(&file).unwrap_or_default();
            if !anchors(&target_text).iter().any(|a| a == fragment) {
                problems.push(format!(
                    "{name}:{line}: ({target}): no heading with the anchor #{fragment} in {}",
                    file.display()
                ));
            }
        }
    }
    assert!(checked >= 10, "the links are found ({checked})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
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
    let ex = examples("test.md", md);
    assert_eq!(ex.len(), 2);
    assert_eq!(ex[0].expected, ["out 1", "irqlab: note: x"]);
    assert_eq!(ex[0].span, (3, 5));
    assert_eq!(ex[1].exit, 1);
    let _ = Path::new(".");
    assert_eq!(
        anchor("Uncertainty: `validate --uncertainty N`"),
        "uncertainty-validate---uncertainty-n"
    );
    assert_eq!(anchor("Seed 001, Table 4"), "seed-001-table-4");
    assert_eq!(anchors("# A\n## A\n```\n# not\n```\n#no"), ["a", "a-1"]);
    assert_eq!(
        links("see [x](a.md#b), `[c](d)` and [e](f)\n```\n[g](h)\n```"),
        [(1, "a.md#b".to_string()), (1, "f".to_string())]
    );
}
