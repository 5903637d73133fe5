//! `irqlab-fuzz`: the fuzz targets on stable Rust (`fuzz/README.md`). `run` replays a target's
//! corpus, then mutates it until a time or iteration bound; the first input that panics is
//! written to the artifacts directory, printed, and the exit status is 1. `replay` runs given
//! files (a crash to reproduce); `pack` writes a captured tree as a `sysfs_tree` input.

use clap::{Parser, Subcommand};
use irqlab_fuzz::{mutate::Mutator, target, Target, TARGETS};
use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "irqlab's fuzz targets on stable Rust (fuzz/README.md)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The targets' names.
    List,
    /// Replay TARGET's corpus, then fuzz it with mutations of the corpus until a bound.
    Run {
        target: String,
        /// The corpus directory (fuzz/corpus/TARGET of the repository by default).
        #[arg(long)]
        corpus: Option<PathBuf>,
        /// Stop after this many seconds of mutated inputs (the corpus replay comes first).
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        /// ... or after this many mutated inputs, whichever comes first.
        #[arg(long)]
        iterations: Option<u64>,
        /// The mutator's seed (printed, so a run can be repeated); random by default.
        #[arg(long)]
        seed: Option<u64>,
        /// Where a crashing input is written (fuzz/artifacts/TARGET by default).
        #[arg(long)]
        artifacts: Option<PathBuf>,
        /// An input that takes longer than this is a hang, reported as a crash (libFuzzer's
        /// `-timeout`, as fuzz/run.sh gives it).
        #[arg(long, default_value_t = 10)]
        timeout_seconds: u64,
    },
    /// Run TARGET on each FILE (a crash from `run` or from cargo-fuzz).
    Replay {
        target: String,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Write the tree under DIR as one `sysfs_tree` input, on standard output.
    Pack { dir: PathBuf },
}

/// The repository's `fuzz/` directory.
fn fuzz_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::List => {
            for t in TARGETS {
                println!("{}", t.name);
            }
            ExitCode::SUCCESS
        }
        Command::Run {
            target: name,
            corpus,
            seconds,
            iterations,
            seed,
            artifacts,
            timeout_seconds,
        } => {
            let Some(t) = find(&name) else {
                return ExitCode::from(2);
            };
            let corpus = corpus.unwrap_or_else(|| fuzz_dir().join("corpus").join(t.name));
            let artifacts = artifacts.unwrap_or_else(|| fuzz_dir().join("artifacts").join(t.name));
            let seed = seed.unwrap_or_else(rand::random);
            let limits = Limits {
                seconds,
                iterations,
                hang: Duration::from_secs(timeout_seconds),
            };
            run(t, &corpus, &artifacts, &limits, seed)
        }
        Command::Replay {
            target: name,
            files,
        } => {
            let Some(t) = find(&name) else {
                return ExitCode::from(2);
            };
            let mut failed = false;
            for f in files {
                match std::fs::read(&f) {
                    Ok(data) => match call(t, &data) {
                        Ok(()) => println!("{}: no panic", f.display()),
                        Err(m) => {
                            println!("{}: PANIC: {m}", f.display());
                            failed = true;
                        }
                    },
                    Err(e) => {
                        eprintln!("irqlab-fuzz: {}: {e}", f.display());
                        return ExitCode::from(2);
                    }
                }
            }
            ExitCode::from(u8::from(failed))
        }
        Command::Pack { dir } => match irqlab_fuzz::tree::pack(&dir) {
            Ok(bytes) => {
                let _ = std::io::stdout().write_all(&bytes);
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("irqlab-fuzz: {}: {e}", dir.display());
                ExitCode::from(2)
            }
        },
    }
}

fn find(name: &str) -> Option<&'static Target> {
    let t = target(name);
    if t.is_none() {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        eprintln!(
            "irqlab-fuzz: no target '{name}'; the targets are {}",
            names.join(", ")
        );
    }
    t
}

/// Run the target on one input; a panic's message as the error.
fn call(t: &Target, data: &[u8]) -> Result<(), String> {
    std::panic::catch_unwind(AssertUnwindSafe(|| (t.run)(data))).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(a panic without a message)".into())
    })
}

/// [`call`], with an input that runs past `hang` an error too (it cannot be stopped, only
/// reported once it returns; one that never returns is `fuzz/run.sh`'s `timeout`'s).
fn call_timed(t: &Target, data: &[u8], hang: Duration) -> Result<(), String> {
    let start = Instant::now();
    call(t, data)?;
    let took = start.elapsed();
    if took > hang {
        return Err(format!(
            "a hang: the input took {:.1} s, over the {} s limit",
            took.as_secs_f64(),
            hang.as_secs()
        ));
    }
    Ok(())
}

/// When `run` stops, and what is a hang.
struct Limits {
    seconds: u64,
    iterations: Option<u64>,
    hang: Duration,
}

fn run(t: &Target, corpus_dir: &Path, artifacts: &Path, limits: &Limits, seed: u64) -> ExitCode {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(corpus_dir) {
        Ok(d) => d
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect(),
        Err(e) => {
            eprintln!("irqlab-fuzz: {}: {e}", corpus_dir.display());
            return ExitCode::from(2);
        }
    };
    files.sort();
    // The panic hook would print every caught panic; the one that matters is reported below.
    std::panic::set_hook(Box::new(|_| {}));
    let mut corpus = Vec::new();
    for f in &files {
        let Ok(data) = std::fs::read(f) else { continue };
        if let Err(m) = call_timed(t, &data, limits.hang) {
            return crashed(
                t,
                &data,
                &m,
                artifacts,
                &format!("corpus file {}", f.display()),
            );
        }
        corpus.push(data);
    }
    let mut mutator = Mutator::new(seed, t.tokens);
    let start = Instant::now();
    let bound = Duration::from_secs(limits.seconds);
    let mut done = 0u64;
    while start.elapsed() < bound && limits.iterations.is_none_or(|n| done < n) {
        let input = mutator.next(&corpus);
        if let Err(m) = call_timed(t, &input, limits.hang) {
            return crashed(
                t,
                &input,
                &m,
                artifacts,
                &format!("mutated input {done}, seed {seed}"),
            );
        }
        done += 1;
    }
    println!(
        "{}: {} corpus files replayed, then {done} mutated inputs in {:.1} s (seed {seed}): no panic",
        t.name,
        corpus.len(),
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

/// Save and show a crashing input; exit status 1.
fn crashed(t: &Target, data: &[u8], message: &str, artifacts: &Path, what: &str) -> ExitCode {
    // FNV-1a names the file by its content, as libFuzzer's crash-<sha1> names do.
    let hash = data.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    });
    let file = artifacts.join(format!("crash-{hash:016x}"));
    let saved = std::fs::create_dir_all(artifacts).and_then(|()| std::fs::write(&file, data));
    println!("{}: FAILED on {what}: {message}", t.name);
    match saved {
        Ok(()) => println!(
            "  input saved to {}; repeat with: irqlab-fuzz replay {} {}",
            file.display(),
            t.name,
            file.display()
        ),
        Err(e) => println!("  (cannot save the input to {}: {e})", file.display()),
    }
    // Also in the log, for CI, where the artifacts directory is not kept.
    let shown = &data[..data.len().min(4096)];
    println!(
        "  input ({} bytes{}): {}",
        data.len(),
        if shown.len() < data.len() {
            ", first 4096 shown"
        } else {
            ""
        },
        shown.escape_ascii()
    );
    ExitCode::FAILURE
}
