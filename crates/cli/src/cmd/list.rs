//! `irqlab list`: what irqlab ships (experiments with their rows, scenarios with their parts).

use crate::ui::print;
use anyhow::Result;
use irqlab_report::table::Table;
use irqlab_report::text::wrap;
use irqlab_sim::experiment::Experiment;
use irqlab_sim::shipped;

pub fn run() -> Result<()> {
    let mut out = String::from(
        "Experiments (irqlab validate runs them all; --only ID or PATTERN picks rows):\n",
    );
    for e in Experiment::load_dir(shipped::experiments_dir())? {
        let rows: Vec<&str> = e.file.check.iter().map(|c| c.id()).collect();
        out.push_str(&format!("  {}  {}\n", e.file.id, e.file.title));
        out.push_str(&wrap(
            &format!("rows: {}", rows.join(" ")),
            "           ",
            "                 ",
        ));
    }
    out.push_str("\nScenarios (irqlab sim NAME, e.g. irqlab sim seed002/fpga):\n");
    let mut t = Table::new(&["scenario", "run", "platform", "kernel"]);
    for s in shipped::scenario_entries() {
        // A forwarding run is its length (it counts frames); any other counts samples.
        let run = if s.duration_ms > 0.0 {
            format!("{} ms", s.duration_ms)
        } else {
            format!("{} samples", irqlab_stats::thousands(s.samples))
        };
        t.row(vec![s.name, run, s.platform, s.kernel]);
    }
    out.push_str(&t.render());
    out.push_str(
        "\nA path on disk is read from disk: irqlab sim my.toml, irqlab validate --experiments DIR.\n\
         To edit a shipped scenario, platform or kernel: irqlab show seed002/fpga > my.toml. Its\n\
         --set keys, values and ranges: irqlab show seed002/fpga --keys.\n",
    );
    print(&out)
}
