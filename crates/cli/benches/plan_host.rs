//! `irqlab plan affinity --host --root TREE` on fake hosts of thousands of CPUs (issue 37, item
//! 7: the planner was quadratic in the CPU count; 65,536 CPUs did not finish in 120 s).
//!
//! Each tree is [`fake_host::FakeHost::large`]: SOCKETS sockets (default 8), two threads a core,
//! an L2 per core and an L3 per socket, and three multi-queue NICs (64 + 128 + 256 queues),
//! planned with `--flow eth0:eth1 --nic eth2` (pairs and single queues). The whole command is
//! timed, reading the tree included: a real host's sysfs costs the same reads. Each size runs
//! RUNS times (default 5); the median, fastest and slowest are printed with the machine, since
//! the machine may be shared. A run past TIMEOUT_S seconds (default 300) is stopped and
//! reported as not finished.
//!
//! Usage: `cargo bench -p irqlab --bench plan_host [-- CPUS...]` (default 8192 16384 65536), or
//! bench/plan-host.sh. IRQLAB=path times another binary (an older build) on the same trees.

#[path = "../../host/tests/fake_host/mod.rs"]
mod fake_host;

use fake_host::{FakeHost, LargeHost};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| {
            eprintln!("{name}: '{v}' is not a whole number");
            std::process::exit(2)
        }),
        Err(_) => default,
    }
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("an unknown CPU".to_string(), |(_, m)| m.trim().to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cores} x {model}, Linux {}", kernel.trim())
}

/// One run's wall time, or None past `timeout`.
fn run_once(
    bin: &str,
    tree: &std::path::Path,
    state: &std::path::Path,
    timeout: Duration,
) -> Option<f64> {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .args(["plan", "affinity", "--host", "--root"])
        .arg(tree)
        .args(["--flow", "eth0:eth1", "--nic", "eth2"])
        .env("IRQLAB_STATE_DIR", state)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("irqlab runs");
    loop {
        if let Some(status) = child.try_wait().expect("waiting for irqlab") {
            let wall = start.elapsed().as_secs_f64();
            assert!(
                status.success(),
                "irqlab plan affinity --host failed: {status}"
            );
            return Some(wall);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The median of sorted values.
fn median(sorted: &[f64]) -> f64 {
    let m = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[m]
    } else {
        (sorted[m - 1] + sorted[m]) / 2.0
    }
}

fn main() {
    let sizes: Vec<u32> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(|a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("'{a}' is not a CPU count");
                std::process::exit(2)
            })
        })
        .collect();
    let sizes = if sizes.is_empty() {
        vec![8192, 16384, 65536]
    } else {
        sizes
    };
    let runs = env_number("RUNS", 5).max(1) as usize;
    let sockets = env_number("SOCKETS", 8) as u32;
    let timeout = Duration::from_secs(env_number("TIMEOUT_S", 300));
    let bin = std::env::var("IRQLAB").unwrap_or_else(|_| env!("CARGO_BIN_EXE_irqlab").into());
    println!("machine: {}", machine());
    println!("binary: {bin}");
    println!(
        "plan affinity --host --flow eth0:eth1 --nic eth2; {sockets} sockets, SMT 2, NICs of \
         64 (rx and tx IRQs), 128 and 256 queues; {runs} runs each"
    );
    for n in sizes {
        let start = Instant::now();
        let h = FakeHost::large(&LargeHost::with_three_nics(n, sockets));
        let built = start.elapsed().as_secs_f64();
        let mut walls: Vec<f64> = Vec::new();
        let mut unfinished = 0;
        for _ in 0..runs {
            match run_once(&bin, h.root(), &h.state_dir(), timeout) {
                Some(w) => walls.push(w),
                None => {
                    unfinished += 1;
                    break; // the next would not finish either
                }
            }
        }
        walls.sort_by(f64::total_cmp);
        let mut line = format!("{n:>6} CPUs (tree built in {built:.1} s): ");
        if !walls.is_empty() {
            line.push_str(&format!(
                "median {:.3} s, fastest {:.3} s, slowest {:.3} s of {} runs",
                median(&walls),
                walls[0],
                walls[walls.len() - 1],
                walls.len()
            ));
        }
        if unfinished > 0 {
            line.push_str(&format!("did not finish in {} s", timeout.as_secs()));
        }
        println!("{line}");
    }
}
