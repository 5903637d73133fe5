//! The command line: plain values only, parsed by clap without touching the host or the disk
//! (ripgrep's `lowargs`). Each command's module turns these into work.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Exit statuses, as every command's `--help` states them (the values are `main.rs`'s).
const EXIT_ALL: &str = "Exit status: 0 done; 1 a validation row fails or is undecided (validate, \
sweep merge of draws); 2 bad input (a file, a flag, a configuration hardware cannot have) or a \
measurement that cannot run; 3 a host setting could not be put back (the message says how to by \
hand), or an applied affinity plan reads back otherwise than planned.";
const EXIT_SIM: &str = "Exit status: 0 done; 2 bad input (a file, a flag, a configuration \
hardware cannot have) or a run that cannot complete.";
const EXIT_VALIDATE: &str = "Exit status: 0 every row passes; 1 a row fails or is undecided (too \
few samples to decide it); 2 bad input.";
const EXIT_HOST: &str = "Exit status: 0 done; 2 bad input, or the system cannot be read; 3 \
(--cleanup) something left by a crashed irqlab could not be undone (the message says how to by \
hand).";
const EXIT_PLOT: &str = "Exit status: 0 done; 2 bad input (a file that is not a run result, a \
directory that cannot be written).";
const EXIT_MEASURE: &str = "Exit status: 0 done, also when stopped early by Ctrl-C or SIGTERM \
(the results so far are shown); 2 bad input or a measurement that cannot run here; 3 a host \
setting could not be put back (the message says how to by hand).";
const EXIT_LIST: &str = "Exit status: 0.";
const EXIT_SHOW: &str = "Exit status: 0 done; 2 bad input (no such shipped file, a --set that \
does not apply).";
const EXIT_PLAN: &str = "Exit status: 0 done; 2 bad input (a platform that cannot be read, a card \
that cannot be placed).";
const EXIT_PLAN_GROUP: &str = "Exit status: 0 done; 2 bad input (a platform that cannot be \
read, a card that cannot be placed, a flow naming no NIC there), or (affinity --host) --apply and \
--restore refused or stopped by a signal; 3 (affinity --host) a mask could not be put back (the \
message says how to by hand), or a mask read back after --apply is not the plan's (named).";
const EXIT_PLAN_AFFINITY: &str = "Exit status: 0 done (also --apply with IRQs the kernel \
would not move, which it names, and --restore with nothing to restore); 2 bad input (a platform \
that cannot be read, a card that cannot be placed, a flow naming no NIC there), or --apply and \
--restore refused (not root, an applied plan not restored yet) or stopped by a signal (what was \
set is put back); 3 a mask could not be put back (the message says how to by hand), or a mask \
read back after --apply is not the plan's (the IRQs named).";
const EXIT_SWEEP: &str = "Exit status: 0 done (merge of draws: every row passes); 1 (merge of \
draws) a row fails or is undecided; 2 bad input, a run that cannot complete, or (merge) points \
without a result (the message names the shards to run again), a point twice with different \
results, or a shard's results that fail the merge's checks (each file named with why; nothing is \
written).";

#[derive(Parser)]
#[command(
    name = "irqlab",
    version,
    about = "Interrupt-latency laboratory: simulate the interrupt path, validate against published experiments, inventory and measure the host",
    after_help = EXIT_ALL
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Simulate a scenario and print what it measures (latencies, or a forwarding run's frames)
    /// and its counters.
    #[command(after_help = EXIT_SIM)]
    Sim(SimArgs),
    /// Run every published experiment (the shipped ones, or those in --experiments DIR) and
    /// compare published with simulated.
    #[command(after_help = EXIT_VALIDATE)]
    Validate(ValidateArgs),
    /// Inventory this host's interrupts: delivery, trigger, device and driver, rates per CPU,
    /// affinity, and findings (legacy INTx on MSI-capable devices, shared lines, load on one
    /// CPU, irqbalance).
    #[command(after_help = EXIT_HOST)]
    Host(HostArgs),
    /// Draw saved results (`--json` of sim or measure timer) as SVG figures; several files are
    /// overlaid on the same axes, each metric labelled with its file's name.
    #[command(after_help = EXIT_PLOT)]
    Plot(PlotArgs),
    /// Measure this host: timer wake-up latency (`timer`), interrupt handler and softirq times
    /// (`irqs`).
    #[command(subcommand, after_help = EXIT_MEASURE)]
    Measure(Measure),
    /// List what irqlab ships: the published experiments (with their validation rows) and the
    /// scenarios `irqlab sim` runs by name.
    #[command(after_help = EXIT_LIST)]
    List,
    /// Print a shipped scenario, platform or kernel file, ready to copy and edit (`irqlab show
    /// seed002/fpga > my.toml`, then `irqlab sim my.toml`); with --keys, every key `irqlab sim
    /// --set` takes for a scenario, with its value and its declared range.
    #[command(after_help = EXIT_SHOW)]
    Show(ShowArgs),
    /// Sweeps beyond one machine: plan uncertainty draws or a what-if grid as a manifest of
    /// points, run shard I of N of them anywhere (a Slurm job array task, say), merge the
    /// shards' results into the report one machine would print.
    #[command(subcommand, after_help = EXIT_SWEEP)]
    Sweep(Sweep),
    /// Plan what seed 001's rules say to set: on a platform's model, INTXSWZCTRL values that
    /// spread the PCIe INTx of the populated ports over the system interrupts (`swizzle`), and
    /// static IRQ affinity for NIC flows by the seed's three rules (`affinity`); with `affinity
    /// --host`, that affinity on this host's CPUs and NIC queues, applied with --apply (the old
    /// masks saved first) and put back with --restore.
    #[command(subcommand, after_help = EXIT_PLAN_GROUP)]
    Plan(Plan),
}

#[derive(Subcommand)]
pub enum Plan {
    /// For the ports populated with --card, choose the INTXSWZCTRL values (Intel 5000 root
    /// ports) that spread INTx most evenly over the IO-APIC's PCI interrupts, and print the IRQ
    /// table without and with them (seed 001 Table 3's form) and the firmware's routing table.
    #[command(after_help = EXIT_PLAN)]
    Swizzle(PlanSwizzleArgs),
    /// Assign the IRQs of NIC flows to CPUs by seed 001's three rules (each NIC its own CPU, a
    /// flow's two NICs in one socket; more NICs than CPUs: a flow's two NICs on one CPU; two
    /// sockets only when nothing else fits), on a platform with --card as plan swizzle takes
    /// it; prints the plan against the default (every IRQ on CPU 0) and the smp_affinity
    /// masks. With --host, on this host's CPUs and NICs, queue by queue; --apply sets the
    /// masks (saving the old ones first) and --restore puts them back.
    #[command(after_help = EXIT_PLAN_AFFINITY)]
    Affinity(PlanAffinityArgs),
}

/// `plan affinity`'s flags that need --host: given without it, clap names --host as the one
/// missing (`requires`), not the model's PLATFORM, --card and --flow as well.
const HOST_ONLY: [&str; 6] = ["host", "nic", "apply", "restore", "root", "json"];

#[derive(Args)]
pub struct PlanAffinityArgs {
    /// The platform: a file, or a shipped one by name (server-2006-bensley-5000p). Not with
    /// --host.
    #[arg(
        value_name = "PLATFORM",
        required_unless_present_any = HOST_ONLY,
        conflicts_with = "host"
    )]
    pub platform: Option<PathBuf>,
    /// A card in a port, as plan swizzle takes it (--card port6=2).
    #[arg(
        long,
        value_name = "PORT=FUNCTIONS",
        required_unless_present_any = HOST_ONLY,
        conflicts_with = "host"
    )]
    pub card: Vec<irqlab_sim::plan::swizzle::Card>,
    /// A flow: packets received on one interface leave on the other, and back (--flow
    /// eth2:eth4). Interfaces are named in PCI bus order, as plan swizzle prints them; with
    /// --host, as this host names them (ip link).
    #[arg(long, value_name = "NIC:NIC", required_unless_present_any = HOST_ONLY)]
    pub flow: Vec<irqlab_sim::plan::affinity::Flow>,
    /// Take the IRQs with the INTXSWZCTRL values plan swizzle chooses, not the platform
    /// file's.
    #[arg(long, conflicts_with = "host")]
    pub swizzle: bool,
    /// Plan for this host instead of a model: its CPUs (sockets, cores, shared caches), its
    /// NICs and their per-queue IRQs (queue i of a flow's two NICs on CPUs by the same rules);
    /// without --flow or --nic, each NIC is a flow of its own. Prints the masks and the
    /// commands, and changes nothing without --apply.
    #[arg(long)]
    pub host: bool,
    /// With --host: a NIC that receives and transmits its own traffic, a flow of its own
    /// (repeatable; beside --flow).
    #[arg(
        long,
        value_name = "NIC",
        requires = "host",
        conflicts_with = "platform"
    )]
    pub nic: Vec<String>,
    /// With --host: set the planned masks (root). Each IRQ's old mask is saved first; the plan
    /// stays after irqlab exits, until --restore. IRQs the kernel manages are skipped and
    /// named. Refused while an applied plan is in force.
    #[arg(long, requires = "host", conflicts_with_all = ["restore", "platform"])]
    pub apply: bool,
    /// With --host: put back the masks the last --apply saved, and forget them (root).
    #[arg(long, requires = "host", conflicts_with_all = ["flow", "nic", "platform"])]
    pub restore: bool,
    /// With --host: read /proc and /sys under DIR instead of / (a captured or test tree;
    /// --apply and --restore then write that tree's files, and need no root).
    #[arg(
        long,
        value_name = "DIR",
        requires = "host",
        conflicts_with = "platform"
    )]
    pub root: Option<PathBuf>,
    /// With --host: also write the host's CPUs and NICs, the plan and (with --apply) what was
    /// set as JSON to FILE (checked before anything is applied).
    #[arg(
        long,
        value_name = "FILE",
        requires = "host",
        conflicts_with_all = ["restore", "platform"]
    )]
    pub json: Option<PathBuf>,
    /// Simulate the plan against the default (every IRQ on CPU 0) and an irqbalance-like round
    /// robin: the flows forwarded at line rate on this scenario of the platform, whose network
    /// devices are named as the interfaces here (experiments/seed001/forward.toml for the
    /// Bensley board). Not with --host.
    #[arg(long, value_name = "SCENARIO", conflicts_with = "host")]
    pub simulate: Option<PathBuf>,
    /// Override a parameter of --simulate's scenario (KEY=VALUE, as sim --set). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "simulate")]
    pub set: Vec<String>,
}

#[derive(Args)]
pub struct PlanSwizzleArgs {
    /// The platform: a file, or a shipped one by name (server-2006-bensley-5000p).
    #[arg(value_name = "PLATFORM")]
    pub platform: PathBuf,
    /// A card in an empty port of the platform, with its number of functions (function f
    /// signals INT(A+f), as a dual-port 82571EB; FUNCTIONS defaults to 1): --card port6=2.
    /// Repeat for each populated port; an on-board device that sits below a port is a card
    /// there too.
    #[arg(long, value_name = "PORT=FUNCTIONS", required = true)]
    pub card: Vec<irqlab_sim::plan::swizzle::Card>,
    /// The flows (NIC:NIC, repeatable) that carry the traffic: among the values that spread
    /// INTx evenly, take one that keeps these NICs on lines of their own. With --simulate,
    /// forward them with the registers as they are and as planned, each with plan affinity's
    /// placement.
    #[arg(long, value_name = "NIC:NIC")]
    pub flow: Vec<irqlab_sim::plan::affinity::Flow>,
    /// A forwarding scenario of this platform whose network devices are named as the
    /// interfaces here (experiments/seed001/forward.toml for the Bensley board); needs --flow.
    #[arg(long, value_name = "SCENARIO", requires = "flow")]
    pub simulate: Option<PathBuf>,
    /// Override a parameter of --simulate's scenario (KEY=VALUE, as sim --set). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "simulate")]
    pub set: Vec<String>,
}

#[derive(Subcommand)]
pub enum Sweep {
    /// Write a manifest of points: N uncertainty draws (--draws, as validate --uncertainty N
    /// runs them, and the nominal validation), or a what-if grid over one scenario (--scenario
    /// with --grid). Every point carries its seed, derived from the point alone, and its
    /// values as the exact --set text.
    #[command(after_help = EXIT_SWEEP)]
    Plan(SweepPlanArgs),
    /// Run shard I of N of a manifest's points (those whose index is I modulo N), on all cores,
    /// and write their results to DIR/shard-I-of-N.json.
    #[command(after_help = EXIT_SWEEP)]
    Run(SweepRunArgs),
    /// Merge the shards' results in DIR: each file's digest and histograms checked, every point
    /// exactly once (else the shards to run again are named), then the report: for draws the
    /// validation with its uncertainty section, as validate --uncertainty N prints it; for a
    /// grid a table of every cell.
    #[command(after_help = EXIT_SWEEP)]
    Merge(SweepMergeArgs),
}

#[derive(Args)]
pub struct SweepPlanArgs {
    /// Write the manifest to FILE (JSON).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Uncertainty draws: N Latin-hypercube draws over the ranges the experiments' files
    /// declare, as validate --uncertainty N draws them.
    ///
    /// With --scenario: N draws over the ranges that scenario's files declare, as
    /// `irqlab sim SCENARIO --uncertainty N` draws them (with its --set, --samples, --seed and
    /// --draw-seed), the plain run and the validation rows on the scenario; the merge prints
    /// what `sim --uncertainty N` prints.
    #[arg(long, value_name = "N", required_unless_present = "scenario",
          conflicts_with = "grid", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(2..=100_000))]
    pub draws: Option<u32>,
    /// The seed of the draws (as validate's --draw-seed).
    #[arg(long, value_name = "SEED", default_value_t = 1, requires = "draws",
          allow_negative_numbers = true, value_parser = whole::<u64, 0, { u64::MAX }>)]
    pub draw_seed: u64,
    /// Directory of experiment files (default: the experiments shipped in irqlab).
    #[arg(
        long,
        value_name = "DIR",
        requires = "draws",
        conflicts_with = "scenario"
    )]
    pub experiments: Option<PathBuf>,
    /// Only the rows of an experiment (`seed002`) or the rows whose id matches (a substring,
    /// or a pattern with `*`), as validate's --only.
    #[arg(long, value_name = "PATTERN", requires = "draws", value_parser = parse_only,
          conflicts_with = "scenario")]
    pub only: Option<String>,
    /// Run the published sample counts where they are long (as validate --full).
    #[arg(long, requires = "draws", conflicts_with_all = ["samples", "scenario"])]
    pub full: bool,
    /// A what-if over this scenario: a file, or the name of a shipped one (`seed000/ws`); a
    /// grid with --grid, draws over its ranges with --draws.
    #[arg(long, value_name = "SCENARIO", required_unless_present = "draws")]
    pub scenario: Option<PathBuf>,
    /// With --scenario and --draws: leave out the validation rows on the scenario (as sim
    /// --no-rows).
    #[arg(long, requires = "scenario", requires = "draws")]
    pub no_rows: bool,
    /// One axis of the grid: a --set key and its values, e.g. `delivery=msi,ioapic,xtpic`.
    /// Repeatable; the grid is every combination of the axes' values (the first axis varies
    /// slowest).
    #[arg(long = "grid", value_name = "KEY=V1,V2,...", requires = "scenario")]
    pub grid: Vec<String>,
    /// Override a parameter in every grid point, before the point's own values. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "scenario")]
    pub set: Vec<String>,
    /// The seed of every grid cell's first point (default: the scenario's `seed`); every cell
    /// takes the same seeds, so differences between cells are the parameters', not noise.
    #[arg(long, value_name = "SEED", requires = "scenario", allow_negative_numbers = true,
          value_parser = whole::<u64, 0, { u64::MAX }>)]
    pub seed: Option<u64>,
    /// Points per grid cell, each with its own seed; the merge adds their histograms (N times
    /// the samples, run in parallel).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "scenario",
          conflicts_with = "draws", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub repeat: u32,
    /// Interrupts per run: for draws every run's count (as validate --samples), for a grid each
    /// point's (default: the scenario's `samples`).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub samples: Option<u64>,
}

#[derive(Args)]
pub struct SweepRunArgs {
    /// The manifest `irqlab sweep plan` wrote.
    pub manifest: PathBuf,
    /// This shard's index, 0 to N-1 (default: $SLURM_ARRAY_TASK_ID, as in a Slurm job array).
    #[arg(long, value_name = "I", allow_negative_numbers = true, value_parser = whole::<u32, 0, { u64::MAX }>)]
    pub shard: Option<u32>,
    /// How many shards there are (default: $SLURM_ARRAY_TASK_COUNT). Give it in a job script
    /// when a task may be run again alone (sbatch --array=2 has a task count of 1).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub of: Option<u32>,
    /// Directory for the results (created if missing): DIR/shard-I-of-N.json, written whole or
    /// not at all.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Args)]
pub struct SweepMergeArgs {
    /// The manifest `irqlab sweep plan` wrote.
    pub manifest: PathBuf,
    /// The directory the shards wrote their results to (every *.json file in it that is a
    /// shard's result is read).
    pub results: PathBuf,
    /// Also write the merged result as JSON to FILE: for draws a validation (as validate
    /// --json), for a grid a grid report.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw SVG figures into DIR: for draws as validate --uncertainty --plot, for a grid every
    /// cell's latencies overlaid.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

#[derive(Args)]
pub struct SimArgs {
    /// Scenario: a file, or the name of a shipped one (`seed002/fpga`; `irqlab list` shows
    /// them). A file on disk wins over a shipped scenario of the same name.
    pub scenario: PathBuf,
    /// Override a parameter by dotted path, e.g. `delivery=xtpic`,
    /// `platform.cpu.clock_hz=2.0e9`, `device.0.read_turnaround_ns=300`. Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Random seed (default: the scenario's `seed`).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<u64, 0, { u64::MAX }>)]
    pub seed: Option<u64>,
    /// Interrupts to raise (default: the scenario's `samples`): a whole number, `20000`,
    /// `20_000`, or with k, M or G (`20k`, `4M`).
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub samples: Option<u64>,
    /// Print the first N packets the analyzer saw on the measured device's link (Figure 7
    /// style): a PCIe device's TLPs, or the CPU's I/O cycles on the ISA bus of seed 004's PC.
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true,
          value_parser = whole::<usize, 0, { u64::MAX }>)]
    pub trace: usize,
    /// Also write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw SVG figures into DIR: latency histogram (log count axis), cumulative distribution,
    /// body view when a far tail squeezes the bulk, and the sample series.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Split the samples over N independent replications run on all cores and merge their
    /// histograms (replication 0 uses --seed; the result depends on N, not on the cores). A
    /// seed-004 scenario's phases are set by sample number, so each of its replications
    /// runs the whole timeline and the histograms hold N times the samples.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub replications: u32,
    /// For a scenario that runs cyclictest (seed003/idle, seed003/flood): also write its
    /// latencies in cyclictest's --histogram format to FILE, the same format and renderer as
    /// `irqlab measure timer --histogram-out`, so a simulated and a measured run plot alike.
    #[arg(long, value_name = "FILE")]
    pub histogram_out: Option<PathBuf>,
    /// Largest bucket of --histogram-out in us (cyclictest's -h value); later wake-ups count
    /// as overflows.
    #[arg(long, value_name = "US", default_value_t = 10_000, allow_negative_numbers = true,
          value_parser = whole::<u64, 1, 1_000_000>)]
    pub histogram_max_us: u64,
    /// A what-if with its uncertainty: N Latin-hypercube draws over the ranges the scenario's
    /// files declare (a parameter --set pins is not drawn), each a run with its own seed, on
    /// all cores. Prints each metric's mean, p50, p99 and max and each counter that changes:
    /// the plain run's value, the 5-95% band over the draws and the three parameters that
    /// drive it; then the validation rows that run this scenario and their verdicts.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(2..=100_000),
          conflicts_with_all = ["trace", "plot", "histogram_out"])]
    pub uncertainty: Option<u32>,
    /// The seed of the uncertainty draws (as validate's --draw-seed): the same seed gives the
    /// same draws and the same output.
    #[arg(long, value_name = "SEED", default_value_t = 1, requires = "uncertainty",
          allow_negative_numbers = true, value_parser = whole::<u64, 0, { u64::MAX }>)]
    pub draw_seed: u64,
    /// With --uncertainty: compare with a baseline. Each draw (and the plain run) runs again
    /// with these overrides after --set, with the same drawn values and seed, and each
    /// quantity's difference (what-if less baseline) gets its band and drivers: "how much does
    /// a switch add" is --set device.0.switches=1 --against device.0.switches=0. Repeatable.
    #[arg(long, value_name = "KEY=VALUE", requires = "uncertainty")]
    pub against: Vec<String>,
    /// With --uncertainty: leave out the validation rows that run this scenario (their runs
    /// take about as long as the plain run's, once per row's run).
    #[arg(long, requires = "uncertainty")]
    pub no_rows: bool,
}

#[derive(Args)]
pub struct ShowArgs {
    /// What to show: a scenario by its name (`seed002/fpga`) or a file, or a platform or
    /// kernel by the name `irqlab list` shows (`desktop-2017-i7-8700k-z370`).
    pub name: PathBuf,
    /// Instead of the file, list every `--set` key of the scenario with its value (after any
    /// --set given here) and the range its file declares for it (`[range.*]`), if any.
    #[arg(long)]
    pub keys: bool,
    /// With --keys: the values as these overrides leave them (as `irqlab sim --set`).
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "keys")]
    pub set: Vec<String>,
}

#[derive(Args)]
pub struct ValidateArgs {
    /// Directory of experiment files (default: the experiments shipped in irqlab).
    #[arg(long, value_name = "DIR")]
    pub experiments: Option<PathBuf>,
    /// Only the rows of an experiment (an id `irqlab list` shows, such as `seed002`), or the
    /// rows whose id matches (a substring, such as `ws`, or a pattern with `*`, such as
    /// `msi-ws-*`).
    #[arg(long, value_name = "PATTERN", value_parser = parse_only)]
    pub only: Option<String>,
    /// Override the sample count of every run (`20000`, `20k`, `4M`).
    #[arg(long, value_name = "N", value_parser = parse_count, conflicts_with = "full",
          allow_negative_numbers = true)]
    pub samples: Option<u64>,
    /// Run the published sample counts where they are long (seed 002: 256M round trips,
    /// on all cores) instead of the shorter defaults. The output says which ran.
    #[arg(long)]
    pub full: bool,
    /// Also write the validation as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw SVG figures into DIR: per experiment, its runs' latencies overlaid (histogram
    /// with a log count axis, the cumulative distribution, and the body view when a far tail
    /// squeezes the bulk).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Every column in the table (the metric and the source's own words), however wide; by
    /// default the table fits 100 columns and the rest follows under it for rows that do not
    /// pass.
    #[arg(long)]
    pub wide: bool,
    /// Also judge every row by the model's own uncertainty: N Latin-hypercube draws over the
    /// ranges the files declare beside their estimates, each running every run, on all cores.
    /// Prints each row's band (5-95%), the published value's percentile in it, the parameters
    /// that drive it and its class (pass, uninformative, tension, inconsistent). 200 draws
    /// take minutes on two cores.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(2..=100_000))]
    pub uncertainty: Option<u32>,
    /// The seed of the uncertainty draws; every draw's runs take their seeds from it and the
    /// draw's index, so the same seed gives the same result.
    #[arg(
        long,
        value_name = "SEED",
        default_value_t = 1,
        requires = "uncertainty",
        allow_negative_numbers = true,
        value_parser = whole::<u64, 0, { u64::MAX }>
    )]
    pub draw_seed: u64,
}

#[derive(Args)]
pub struct HostArgs {
    /// Take two snapshots this far apart and show rates per CPU (e.g. `2s`, `500ms`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration,
          allow_hyphen_values = true)]
    pub interval: Option<std::time::Duration>,
    /// Also write the inventory as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Read a captured tree (proc/, sys/) instead of the live system; see
    /// crates/host/tests/fixtures/capture-host.sh.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Only undo what irqlab processes that ended without cleaning up (killed with SIGKILL, for
    /// instance) left on this host: tracing instances, private tracefs mounts, load processes,
    /// IRQ masks of an apply, a restore left halfway. Every measurement does this first; this
    /// flag does only that, and exits. irqlab records what it sets up in /run/irqlab (root; else
    /// $XDG_RUNTIME_DIR/irqlab or the temporary directory), or in $IRQLAB_STATE_DIR if set; with
    /// --root TREE, what `plan affinity --host --root TREE` left, recorded in TREE/run/irqlab.
    #[arg(long, conflicts_with_all = ["interval", "json"])]
    pub cleanup: bool,
}

#[derive(Args)]
pub struct PlotArgs {
    /// Result files written with --json.
    #[arg(required = true, value_name = "RESULT.json")]
    pub results: Vec<PathBuf>,
    /// Directory for the figures (`--plot DIR` works too, as in the other commands).
    #[arg(long, visible_alias = "plot", value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Subcommand)]
pub enum Measure {
    /// Timer wake-up latency per CPU, cyclictest's method (pinned SCHED_FIFO threads, absolute
    /// clock_nanosleep on CLOCK_MONOTONIC, mlockall, /dev/cpu_dma_latency held at 0); with
    /// --trace, the IRQ-vs-thread split and the worst wake-up's analysis from trace events.
    #[command(after_help = EXIT_MEASURE)]
    Timer(TimerArgs),
    /// Hard IRQ handler time, softirq raise-to-run delay and run time, and tasklet run time,
    /// per CPU, from the kernel's trace events (root; tracefs). Nothing of the host's tracing
    /// state is changed: irqlab works in its own tracing instance and removes it.
    #[command(after_help = EXIT_MEASURE)]
    Irqs(IrqsArgs),
}

#[derive(Args)]
pub struct TimerArgs {
    /// CPUs to measure on, one thread each (e.g. `0-3,6`; default: all online).
    #[arg(long, short = 'a', value_name = "LIST", value_parser = parse_cpus,
          allow_negative_numbers = true)]
    pub cpus: Option<String>,
    /// Scheduling policy of the measuring threads: fifo, rr, or other (SCHED_OTHER, the fair
    /// scheduler, to see what a normal task gets).
    #[arg(long, value_name = "POLICY", default_value = "fifo",
          value_parser = irqlab_host::timer::Policy::parse)]
    pub policy: irqlab_host::timer::Policy,
    /// Real-time priority of the measuring threads, 1..=99 (default 95; none with --policy
    /// other).
    #[arg(long, short = 'p', allow_negative_numbers = true, value_parser = parse_priority)]
    pub priority: Option<i32>,
    /// Period between wake-ups, in microseconds (cyclictest's -i).
    #[arg(
        long,
        short = 'i',
        visible_alias = "interval",
        value_name = "US",
        default_value_t = 1000,
        allow_negative_numbers = true,
        value_parser = whole::<u64, 1, { u64::MAX }>
    )]
    pub interval_us: u64,
    /// How long to measure: seconds (`10`, as cyclictest's -D) or with a unit (`10s`, `5m`,
    /// `500ms`); without it or --loops, until Ctrl-C.
    #[arg(long, short = 'D', value_name = "DURATION", value_parser = parse_duration,
          conflicts_with = "loops", allow_hyphen_values = true)]
    pub duration: Option<std::time::Duration>,
    /// The PM QoS request held on /dev/cpu_dma_latency during the run, in us (cyclictest's
    /// --latency): 0 keeps every CPU out of idle states with a longer exit latency.
    #[arg(
        long,
        value_name = "US",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub latency: i32,
    /// Print only the result at the end, no live status lines (cyclictest's -q).
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Wake-ups per thread, instead of --duration (cyclictest's -l).
    #[arg(long, short = 'l', value_name = "N", allow_negative_numbers = true,
          value_parser = whole::<u64, 1, { u64::MAX }>)]
    pub loops: Option<u64>,
    /// Stop at the first wake-up later than this (us) and show where its latency went and
    /// what ran on that CPU before it (traces the scheduler, as --trace-sched).
    #[arg(long, value_name = "US", allow_negative_numbers = true, value_parser = whole::<u64, 1, { u64::MAX }>)]
    pub break_us: Option<u64>,
    /// Run this shell command as load for the measurement's duration, then stop it (and
    /// everything it started), e.g. `--load 'stress-ng --cpu 2'`.
    #[arg(long, value_name = "CMD")]
    pub load: Option<String>,
    /// Trace the timer's own events (root, tracefs) for the IRQ/thread split and the analysis
    /// of the worst wake-up. Every traced event between a timer's expiry and the thread running
    /// adds to the latency measured: on a 2-CPU VM these two cost 4-5% of cyclictest's median
    /// (bench/trace-cost.sh), so the default measures untraced, as cyclictest does.
    #[arg(long, conflicts_with = "no_trace")]
    pub trace: bool,
    /// Also trace the scheduler and the interrupt handlers (implies --trace), so the analysis
    /// of the worst wake-up says what ran after the timer's callback too: 8-10% of
    /// cyclictest's median on a 2-CPU VM. --break-us always traces them.
    #[arg(long, conflicts_with = "no_trace")]
    pub trace_sched: bool,
    /// Measure untraced: the default (kept for scripts written when tracing was).
    #[arg(long, hide = true)]
    pub no_trace: bool,
    /// Trace ring buffer per CPU in KiB.
    #[arg(long, value_name = "KIB", default_value_t = 4096, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub buffer_kb: u32,
    /// Also write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the thread latencies in cyclictest's --histogram format (1 us buckets up
    /// to --histogram-max-us, later ones counted as overflows) to FILE, for existing
    /// plotting scripts.
    #[arg(long, value_name = "FILE")]
    pub histogram_out: Option<PathBuf>,
    /// Draw SVG figures of the latencies into DIR (histogram with a log count axis,
    /// cumulative distribution, and the body view when a far tail squeezes the bulk), every
    /// CPU on the same axes.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Largest bucket of --histogram-out in us (cyclictest's -h value); later wake-ups
    /// count as overflows.
    #[arg(long, value_name = "US", default_value_t = 10_000, allow_negative_numbers = true,
          value_parser = whole::<u64, 1, 1_000_000>)]
    pub histogram_max_us: u64,
}

#[derive(Args)]
pub struct IrqsArgs {
    /// How long to measure: seconds (`10`) or with a unit (`10s`, `5m`). Ctrl-C ends it early
    /// with the results so far.
    #[arg(long, short = 'D', value_name = "DURATION", value_parser = parse_duration,
          allow_hyphen_values = true)]
    pub duration: std::time::Duration,
    /// Ring buffer per CPU in KiB; raise it if events are reported lost.
    #[arg(long, value_name = "KIB", default_value_t = 4096, allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub buffer_kb: u32,
    /// Also write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// A whole number from `MIN` to `MAX`. Numeric flags take `allow_negative_numbers`, so that
/// `-5` reaches here (clap would otherwise read it as an unknown flag, "unexpected argument
/// '-5'", without naming the flag it was given to) and is refused with the flag and what it
/// takes.
fn whole<T: TryFrom<u64>, const MIN: u64, const MAX: u64>(s: &str) -> Result<T, String> {
    let takes = if MAX == u64::MAX {
        format!("a whole number, {MIN} or more")
    } else {
        format!("a whole number from {MIN} to {MAX}")
    };
    s.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| (MIN..=MAX).contains(n) && !s.trim().starts_with('+'))
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("{s} is not {takes}"))
}

/// `--priority`: a number (the policy decides its range: 1-99 for fifo and rr, none for other,
/// checked with the policy).
fn parse_priority(s: &str) -> Result<i32, String> {
    s.trim()
        .parse::<i32>()
        .map_err(|_| format!("{s} is not a priority: give 1-99 (SCHED_FIFO, SCHED_RR)"))
}

/// `--cpus`: a CPU list (`0-3,6`) that names each CPU once. The list parser merges repeats (as
/// the kernel's lists never have them), so a CPU given twice is found here, before they are
/// merged: each CPU gets one measuring thread.
fn parse_cpus(s: &str) -> Result<String, String> {
    irqlab_host::timer::parse_cpu_list(s)?;
    let mut seen = std::collections::BTreeSet::new();
    for item in s.split(',') {
        for cpu in irqlab_host::timer::parse_cpu_list(item)? {
            if !seen.insert(cpu) {
                return Err(format!("CPU {cpu} is listed twice; list each CPU once"));
            }
        }
    }
    Ok(s.to_string())
}

/// A count above zero: digits with optional `_` separators, and an optional k, M or G (10^3,
/// 10^6, 10^9) as the published sample counts are written (seed 002's "256M").
/// `--only`: an experiment id or a row pattern; an empty one would select every row, which a
/// script's empty variable must not start.
fn parse_only(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err(
            "give an experiment id (seed002) or a row pattern (msi-ws-*); leave \
                    --only out to run every row"
                .into(),
        );
    }
    Ok(s.to_string())
}

fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let (digits, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000),
        Some((i, 'M')) => (&t[..i], 1_000_000),
        Some((i, 'G')) => (&t[..i], 1_000_000_000),
        _ => (t.as_str(), 1),
    };
    let n = digits
        .parse::<u64>()
        .ok()
        .filter(|_| !digits.starts_with('+'))
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| "expected a whole number such as 20000, 20_000, 20k or 4M".to_string())?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

/// `2s`, `500ms`, `1m`, or bare seconds (`10`, as cyclictest's `-D`): a positive duration.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    // A year: far beyond any measurement, and far from where nanosecond counts (u64: 584
    // years) or Instant arithmetic overflow.
    const LONGEST: std::time::Duration = std::time::Duration::from_secs(365 * 86_400);
    // Duration flags take hyphen values (`-1s` would otherwise be an unknown flag), so a flag
    // given where the duration belongs lands here too.
    if s.starts_with("--") {
        return Err(format!(
            "'{s}' is a flag, not a duration: give a duration such as 2s, 500ms or 10 (seconds)"
        ));
    }
    if s.trim_start().starts_with('-') {
        return Err(format!(
            "{s} is negative: must be a positive number of seconds (10) or a duration such as \
             2s or 500ms"
        ));
    }
    let d = match s.trim().parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => {
            std::time::Duration::try_from_secs_f64(secs).unwrap_or(std::time::Duration::MAX)
        }
        Ok(_) => return Err("must be a positive number of seconds".into()),
        Err(_) => humantime::parse_duration(s).map_err(|e| {
            format!("{e}; expected seconds (10) or a duration such as 2s, 500ms or 1m")
        })?,
    };
    if d.is_zero() {
        return Err("must be longer than zero".into());
    }
    if d > LONGEST {
        return Err("must be at most a year (365 days); measure longer in parts".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_take_separators_and_si_suffixes() {
        for (text, n) in [("20000", 20_000), ("20_000", 20_000), ("20k", 20_000)] {
            assert_eq!(parse_count(text), Ok(n), "{text}");
        }
        assert_eq!(parse_count("256M"), Ok(256_000_000));
        assert_eq!(parse_count("1G"), Ok(1_000_000_000));
        for bad in ["10x", "1.5k", "", "k", "-3", "+3", "20000000000G"] {
            assert!(
                parse_count(bad)
                    .unwrap_err()
                    .contains("expected a whole number"),
                "{bad}"
            );
        }
        assert!(parse_count("0").unwrap_err().contains("at least 1"));
    }

    #[test]
    fn durations_take_bare_seconds_like_cyclictest() {
        use std::time::Duration;
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0")
            .unwrap_err()
            .contains("longer than zero"));
        assert!(parse_duration("-3").is_err());
        for huge in ["1e30", "400d", "1000000000y"] {
            assert!(
                parse_duration(huge).unwrap_err().contains("at most a year"),
                "{huge}"
            );
        }
        assert!(parse_duration("soon")
            .unwrap_err()
            .contains("expected seconds (10)"));
    }
}
