//! `measure timer --histogram-out` keeps working in OSADL's latency-plot recipe unchanged
//! ("Create a latency plot from cyclictest histogram data", OSADL QA Farm; the same steps are
//! in the Real-time Ubuntu documentation): the recipe's own shell commands run on irqlab's file
//! and must give the maximum latency, one data row per bucket and the two-column per-CPU files
//! that gnuplot plots. Runs as any user (without root the measurement warns and goes on).

use assert_cmd::Command;
use std::path::PathBuf;

/// The recipe's steps 2, 3 and 5, verbatim but for the number of cores.
const RECIPE: &str = r#"
max=`grep "Max Latencies" output | tr " " "\n" | sort -n | tail -1 | sed s/^0*//`
grep -v -e "^#" -e "^$" output | tr " " "\t" >histogram
cores=2
for i in `seq 1 $cores`
do
  column=`expr $i + 1`
  cut -f1,$column histogram >histogram$i
done
echo "$max"
"#;

/// Its steps 6 to 8: the gnuplot command it builds.
const PLOT: &str = r#"
echo -n -e "set title \"Latency plot\"\n\
set terminal png\n\
set xlabel \"Latency (us), max $max us\"\n\
set logscale y\n\
set xrange [0:200]\n\
set yrange [0.8:*]\n\
set ylabel \"Number of latency samples\"\n\
set output \"plot.png\"\n\
plot " >plotcmd
for i in `seq 1 $cores`
do
  if test $i != 1
  then
    echo -n ", " >>plotcmd
  fi
  cpuno=`expr $i - 1`
  title=" CPU$cpuno"
  echo -n "\"histogram$i\" using 1:2 title \"$title\" with histeps" >>plotcmd
done
gnuplot -persist <plotcmd
"#;

#[test]
fn the_osadl_recipe_reads_the_histogram_file_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    // Two CPUs if there are two (the recipe's columns), else one listed twice is refused: use 0.
    let cpus = if online.trim() == "0" { "0" } else { "0-1" };
    let out = Command::cargo_bin("irqlab")
        .unwrap()
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["measure", "timer", "-q", "--cpus", cpus])
        .args([
            "--loops",
            "300",
            "--interval-us",
            "500",
            "--histogram-max-us",
            "200",
        ])
        .arg("--histogram-out")
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&output).unwrap();
    assert!(
        text.contains("# Bucket size: 1 us"),
        "the file names its buckets"
    );

    let run = Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(RECIPE)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Step 2's maximum is the file's largest "Max Latencies" value.
    let max: u64 = String::from_utf8_lossy(&run.stdout)
        .trim()
        .parse()
        .unwrap_or(0);
    let file_max = text
        .lines()
        .find_map(|l| l.strip_prefix("# Max Latencies:"))
        .unwrap()
        .split_whitespace()
        .map(|v| v.parse::<u64>().unwrap())
        .max()
        .unwrap();
    assert_eq!(max, file_max);
    // Step 3: only data rows, one per microsecond bucket, tab-separated numbers; our comment
    // line never leaks in.
    let hist = std::fs::read_to_string(dir.path().join("histogram")).unwrap();
    let rows: Vec<&str> = hist.lines().collect();
    assert_eq!(rows.len(), 200);
    for (i, r) in rows.iter().enumerate() {
        let f: Vec<&str> = r.split('\t').collect();
        assert_eq!(f[0].parse::<usize>().unwrap(), i, "{r}");
        assert!(f.iter().all(|x| x.parse::<u64>().is_ok()), "{r}");
    }
    // Step 5: two columns per core file, the counts summing to the loops measured (less
    // overflows).
    let n_cpus = if cpus == "0" { 1 } else { 2 };
    for i in 1..=n_cpus {
        let h = std::fs::read_to_string(dir.path().join(format!("histogram{i}"))).unwrap();
        let total: u64 = h
            .lines()
            .map(|l| l.split('\t').nth(1).unwrap().parse::<u64>().unwrap())
            .sum();
        let overflows = text
            .lines()
            .find_map(|l| l.strip_prefix("# Histogram Overflows:"))
            .unwrap()
            .split_whitespace()
            .nth(i - 1)
            .unwrap()
            .parse::<u64>()
            .unwrap();
        assert_eq!(total + overflows, 300, "histogram{i}");
    }
    // Steps 6 to 8 where gnuplot is installed (Debian's gnuplot-nox; not a dependency of
    // irqlab): the plot is drawn.
    let has_gnuplot = Command::new("gnuplot").arg("--version").output().is_ok();
    if !has_gnuplot {
        eprintln!("gnuplot steps not run: no gnuplot (apt install gnuplot-nox)");
        return;
    }
    let plot = Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(format!("{RECIPE}{PLOT}"))
        .output()
        .unwrap();
    assert!(
        plot.status.success(),
        "{}",
        String::from_utf8_lossy(&plot.stderr)
    );
    let png = std::fs::read(dir.path().join("plot.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "gnuplot drew the plot");
}

#[test]
fn a_simulated_cyclictest_writes_the_same_file_through_the_same_recipe() {
    // `irqlab sim` on seed 003's flood writes its cyclictest's histogram with the renderer
    // `measure timer` uses: the recipe's steps read it the same way (one thread: one column),
    // so a simulated RT box and a measured one plot side by side.
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    let out = Command::cargo_bin("irqlab")
        .unwrap()
        .args(["sim", "seed003/flood", "--samples", "400"])
        .args(["--histogram-max-us", "200", "--histogram-out"])
        .arg(&output)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&output).unwrap();
    assert!(text.starts_with("# Histogram\n# Bucket size: 1 us"));
    let recipe = RECIPE.replace("cores=2", "cores=1");
    let run = Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(&recipe)
        .output()
        .unwrap();
    assert!(run.status.success());
    let max: u64 = String::from_utf8_lossy(&run.stdout).trim().parse().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The run's own table prints the same maximum (in ns; the file truncates to us).
    let row = stdout
        .lines()
        .find(|l| l.starts_with("cyclictest_latency"))
        .unwrap();
    let max_ns: u64 = row
        .split_whitespace()
        .nth(8)
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    assert_eq!(max, max_ns / 1000, "{row}");
    let h = std::fs::read_to_string(dir.path().join("histogram1")).unwrap();
    let total: u64 = h
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(h.lines().count(), 200);
    assert_eq!(total, 400, "every wake-up below 200 us at a 10 us gap");
}

#[test]
fn a_scenario_without_cyclictest_refuses_histogram_out_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("output");
    let out = Command::cargo_bin("irqlab")
        .unwrap()
        .args(["sim", "seed000/soc", "--samples", "50", "--histogram-out"])
        .arg(&output)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("runs no cyclictest") && err.contains("seed003/idle"),
        "{err}"
    );
    assert!(!output.exists());
}
