//! A sweep on a real Slurm cluster: the job script of `docs/sweep.md` runs as an `sbatch --array=0-3` job
//! on the private one-node cluster of `.ci/slurm/up` (Debian's slurm-wlm and munge), and the
//! merge of its four shards equals the unsharded run byte for byte.
//!
//! The test changes nothing on the machine: it installs no package and starts no daemon. It
//! asks `.ci/slurm/up --check` whether that cluster runs, and skips, with the reason printed,
//! where none does (off Linux, or on a machine where nobody started it). `.ci/run` installs,
//! starts and stops the cluster around `cargo test`; by hand: `sudo .ci/slurm/up`, then `cargo
//! test --test slurm`, then `sudo .ci/slurm/down`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Far more than the job takes (seconds): a cluster that has not run it by then is broken.
const JOB_TIMEOUT: Duration = Duration::from_secs(180);

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The job script of `docs/sweep.md`: its ```sh block with `#SBATCH --array`, run as it is.
fn job_script() -> String {
    let guide = std::fs::read_to_string(repo_root().join("docs/sweep.md")).unwrap();
    guide
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
        .find(|b| b.contains("#SBATCH --array=0-3"))
        .expect("docs/sweep.md shows the Slurm job script (a ```sh block with #SBATCH --array=0-3)")
        .to_string()
        + "\n"
}

/// The running cluster's `SLURM_CONF`, or `None` with the reason printed.
fn cluster() -> Option<String> {
    if !cfg!(target_os = "linux") {
        eprintln!("slurm test skipped: the private Slurm cluster runs on Linux only");
        return None;
    }
    let out = Command::new(repo_root().join(".ci/slurm/up"))
        .arg("--check")
        .output()
        .expect(".ci/slurm/up runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let conf = stdout
                .lines()
                .find_map(|l| l.strip_prefix("SLURM_CONF="))
                .unwrap_or_else(|| panic!(".ci/slurm/up printed no SLURM_CONF: {stdout}"));
            Some(conf.to_string())
        }
        Some(77) => {
            eprintln!("slurm test skipped: {}", stderr.trim());
            None
        }
        _ => panic!(".ci/slurm/up failed ({}):\n{stderr}", out.status),
    }
}

fn irqlab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .current_dir(dir)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("SLURM_ARRAY_TASK_COUNT")
        .args(args)
        .output()
        .unwrap()
}

fn check(out: &Output, codes: &[i32], what: &str) {
    assert!(
        out.status.code().is_some_and(|c| codes.contains(&c)),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Slurm client command against the private cluster.
fn slurm(conf: &str, dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .current_dir(dir)
        .env("SLURM_CONF", conf)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"))
}

/// The job's log files, for a failure's message.
fn job_logs(dir: &Path) -> String {
    let mut logs = String::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("slurm-") {
            logs += &format!(
                "--- {name}\n{}",
                std::fs::read_to_string(e.path()).unwrap_or_default()
            );
        }
    }
    logs
}

/// The result of a JSON file as written, without the envelope's times and command line.
fn result_text(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let at = text.find("\n  \"result\": ").expect("an envelope");
    text[at..].to_string()
}

#[test]
fn a_slurm_job_array_merges_into_the_unsharded_run_bit_for_bit() {
    let started = Instant::now();
    let Some(conf) = cluster() else { return };
    let up_s = started.elapsed().as_secs_f64();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = irqlab(
        d,
        &[
            "sweep",
            "plan",
            "--out",
            "manifest.json",
            "--only",
            "msi-ws-*",
            "--samples",
            "300",
            "--draws",
            "8",
        ],
    );
    check(&plan, &[0], "sweep plan");
    std::fs::write(d.join("sweep.sh"), job_script()).unwrap();

    // The job runs as the submitter, in this directory, with this environment: the irqlab
    // under test first on PATH, as the script calls `irqlab`.
    let bin = Path::new(env!("CARGO_BIN_EXE_irqlab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let submitted = Instant::now();
    let out = Command::new("sbatch")
        .current_dir(d)
        .env("SLURM_CONF", &conf)
        .env("PATH", &path)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("SLURM_ARRAY_TASK_COUNT")
        .args(["--parsable", "sweep.sh"])
        .output()
        .expect("sbatch runs");
    check(&out, &[0], "sbatch --parsable sweep.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let job = stdout.trim().split(';').next().unwrap().to_string();
    assert!(!job.is_empty(), "sbatch printed no job id");

    // Poll the queue rather than `sbatch --wait`, whose polls come 2, 10 and 42 s apart.
    loop {
        let q = slurm(&conf, d, "squeue", &["-h", "-j", &job, "-o", "%i"]);
        if String::from_utf8_lossy(&q.stdout).trim().is_empty() {
            break;
        }
        if submitted.elapsed() > JOB_TIMEOUT {
            slurm(&conf, d, "scancel", &[&job]);
            panic!(
                "job {job} not done after {JOB_TIMEOUT:?}; cancelled\n{}",
                job_logs(d)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let job_s = submitted.elapsed().as_secs_f64();
    let show = slurm(&conf, d, "scontrol", &["-o", "show", "job", &job]);
    let tasks = String::from_utf8_lossy(&show.stdout);
    let tasks: Vec<&str> = tasks.lines().filter(|l| l.contains("JobId=")).collect();
    assert_eq!(tasks.len(), 4, "four array tasks:\n{}", tasks.join("\n"));
    for t in &tasks {
        assert!(
            t.contains("JobState=COMPLETED") && t.contains("ExitCode=0:0"),
            "a task did not complete:\n{t}\n{}",
            job_logs(d)
        );
    }
    for shard in 0..4 {
        assert!(
            d.join(format!("results/shard-{shard}-of-4.json")).is_file(),
            "shard {shard}'s results\n{}",
            job_logs(d)
        );
    }

    // The same sweep unsharded, on this machine.
    check(
        &irqlab(
            d,
            &[
                "sweep",
                "run",
                "manifest.json",
                "--shard",
                "0",
                "--of",
                "1",
                "--out",
                "one",
            ],
        ),
        &[0],
        "sweep run --shard 0 --of 1",
    );
    let cluster = irqlab(
        d,
        &[
            "sweep",
            "merge",
            "manifest.json",
            "results",
            "--json",
            "cluster.json",
        ],
    );
    let one = irqlab(
        d,
        &[
            "sweep",
            "merge",
            "manifest.json",
            "one",
            "--json",
            "one.json",
        ],
    );
    // Nominal rows fail at 300 samples: exit 1, as validate.
    check(&cluster, &[0, 1], "sweep merge of the job's shards");
    check(&one, &[0, 1], "sweep merge of one shard");
    assert_eq!(cluster.status.code(), one.status.code());
    assert!(String::from_utf8_lossy(&cluster.stdout).contains("Uncertainty: 8 draws"));
    assert_eq!(cluster.stdout, one.stdout);
    assert_eq!(
        result_text(&d.join("cluster.json")),
        result_text(&d.join("one.json"))
    );
    eprintln!(
        "slurm: cluster up in {up_s:.1} s, job {job} (4 tasks) done in {job_s:.1} s, whole test \
         {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
