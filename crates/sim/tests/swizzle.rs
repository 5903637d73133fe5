//! `irqlab plan swizzle` on the model: the IRQ table of seed 001's Bensley board follows from
//! its topology (Table 3, both rows), the planner's values for Table 2's population are Table 2's,
//! and a card that cannot be placed is refused by name.

use irqlab_sim::plan::swizzle::{Card, Population};
use std::collections::BTreeMap;
use std::path::Path;

fn bensley() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/server-2006-bensley-5000p.toml")
}

fn cards(list: &[&str]) -> Vec<Card> {
    list.iter().map(|c| c.parse().unwrap()).collect()
}

fn table(rows: &[(u8, &[&str])]) -> BTreeMap<u8, Vec<String>> {
    rows.iter()
        .map(|(irq, names)| (*irq, names.iter().map(|n| n.to_string()).collect()))
        .collect()
}

/// Seed 001 Table 3: the on-board dual GbE, slot 6, slot 5 (MCH x8) and slot 4 (631xESB x4),
/// each a dual-port NIC; unswizzled, and with the planner's values (the table's swizzled row, its
/// second "eth3" under IRQ19 read as eth5, DESIGN.md).
#[test]
fn table_3_follows_from_the_topology_and_the_planner() {
    let p = Population::load(
        &bensley(),
        &cards(&["esb-e3=2", "port4=2", "port6=2", "esb-d28=2"]),
    )
    .unwrap();
    let plan = p.plan().unwrap();
    // Interface names in bus order: on-board, slot 6, slot 5, slot 4 (the seed's eth0-eth7).
    let ports: Vec<(&str, &str)> = plan
        .functions
        .iter()
        .map(|f| (f.name.as_str(), f.port.as_str()))
        .collect();
    assert_eq!(
        ports,
        [
            ("eth0", "esb-e3"),
            ("eth1", "esb-e3"),
            ("eth2", "port4"),
            ("eth3", "port4"),
            ("eth4", "port6"),
            ("eth5", "port6"),
            ("eth6", "esb-d28"),
            ("eth7", "esb-d28"),
        ]
    );
    assert_eq!(
        plan.table_before,
        table(&[
            (16, &["eth2", "eth4", "eth6"]),
            (17, &["eth3", "eth5", "eth7"]),
            (18, &["eth0"]),
            (19, &["eth1"]),
        ])
    );
    assert_eq!(
        plan.table_after,
        table(&[
            (16, &["eth2", "eth6"]),
            (17, &["eth3", "eth7"]),
            (18, &["eth0", "eth4"]),
            (19, &["eth1", "eth5"]),
        ])
    );
    let set: Vec<(&str, u8, u8)> = plan
        .registers
        .iter()
        .map(|r| (r.port.as_str(), r.before, r.after))
        .collect();
    // Port 2 carries the on-board LAN (through the ESB2's switch) and stays; slot 5's port 6
    // takes 02h, Table 2's INTA->INTC.
    assert_eq!(set, [("port2", 0, 0), ("port4", 0, 0), ("port6", 0, 2)]);
    assert_eq!((plan.busiest_before, plan.busiest_after), (3, 2));
}

/// Seed 001 Table 2: ports 0, 2, 4 and 6 populated, one device each: the planner's values are the
/// table's barber pole, 00h, 01h, 02h, 03h.
#[test]
fn table_2_population_gets_table_2_values() {
    let text = std::fs::read_to_string(bensley()).unwrap();
    // Four MCH ports with INTXSWZCTRL and nothing else below them: the ESB2's switch and the
    // slot below D28 are taken out of the population by giving them no card.
    let text = text
        .replace("[part.esb-up]", "[part.port0]\nkind = \"bridge\"\ndev = 0\nintx_swizzle = 0\nlink_pipeline_ns = 100.0\n\n[part.esb-up]")
        .replace(
            "down = [\"dram\", \"port2\", \"port4\", \"port6\", \"esi-port\"]",
            "down = [\"dram\", \"port0\", \"port2\", \"port4\", \"port6\", \"esi-port\"]",
        )
        // The ESB2's switch moves to the ESI side, so port 2 is a plain slot.
        .replace("up = \"port2\"\ndown = [\"esb-up\"]", "up = \"esb\"\ndown = [\"esb-up\"]");
    let dir = std::env::temp_dir().join(format!("irqlab-swizzle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("four-ports.toml");
    std::fs::write(&path, text).unwrap();
    let p = Population::load(&path, &cards(&["port0=1", "port2=1", "port4=1", "port6=1"])).unwrap();
    let plan = p.plan().unwrap();
    let values: Vec<(&str, u8)> = plan
        .registers
        .iter()
        .map(|r| (r.port.as_str(), r.after))
        .collect();
    assert_eq!(
        values,
        [("port0", 0), ("port2", 1), ("port4", 2), ("port6", 3)]
    );
    assert_eq!((plan.busiest_before, plan.busiest_after), (4, 1));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cards_that_cannot_be_placed_are_refused_by_name() {
    let err = |c: &[&str]| {
        Population::load(&bensley(), &cards(c))
            .err()
            .expect("refused")
            .to_string()
    };
    let e = err(&["port9=2"]);
    assert!(
        e.contains("--card port9=2") && e.contains("no part 'port9'"),
        "{e}"
    );
    assert!(e.contains("port4") && e.contains("port6"), "{e}");
    let e = err(&["mch=2"]);
    assert!(e.contains("not a root or switch port"), "{e}");
    let e = err(&["port2=2"]);
    assert!(e.contains("already has a link below it"), "{e}");
    let e = err(&["port4=2", "port4=1"]);
    assert!(e.contains("has a card already"), "{e}");
    assert!("port4=9"
        .parse::<Card>()
        .unwrap_err()
        .contains("1-8 functions"));
    assert!("port4=x"
        .parse::<Card>()
        .unwrap_err()
        .contains("PORT=FUNCTIONS"));
}

/// A platform file whose BIOS already spread INTx needs no write; and no plan moves a function
/// to a router line that is not wired to the IO-APIC (its interrupts would be lost).
#[test]
fn plans_count_from_the_current_values_and_never_lose_a_line() {
    let four = cards(&["esb-e3=2", "port4=2", "port6=2", "esb-d28=2"]);
    let text = std::fs::read_to_string(bensley()).unwrap();
    let dir = std::env::temp_dir().join(format!("irqlab-swizzle-now-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Port 4 already at 02h: as even as it gets, so nothing changes.
    let set = text.replacen("dev = 4\nintx_swizzle = 0", "dev = 4\nintx_swizzle = 2", 1);
    assert_ne!(set, text);
    let path = dir.join("port4-set.toml");
    std::fs::write(&path, set).unwrap();
    let plan = Population::load(&path, &four).unwrap().plan().unwrap();
    assert!(
        plan.registers.iter().all(|r| r.before == r.after),
        "{:?}",
        plan.registers
    );
    assert_eq!(plan.busiest_before, 2);
    // PIRQD unwired: a function on it loses its interrupts, so the plan moves eth1 (on it now)
    // to a wired line, and spreads nothing onto it.
    let cut = text.replace(
        "[[wire]]\nfrom = \"pirq-router\"\nfrom_line = 3\nto = \"ioapic\"\nto_line = 19\n",
        "",
    );
    assert_ne!(cut, text);
    let path = dir.join("no-pirqd.toml");
    std::fs::write(&path, cut).unwrap();
    let plan = Population::load(&path, &four).unwrap().plan().unwrap();
    let unwired = |f: &irqlab_sim::plan::swizzle::Function| f.irq_after.is_none();
    let before = plan
        .functions
        .iter()
        .filter(|f| f.irq_before.is_none())
        .count();
    assert_eq!(before, 1, "eth1 is on PIRQD");
    assert_eq!(plan.functions.iter().filter(|f| unwired(f)).count(), 0);
    std::fs::remove_dir_all(&dir).ok();
}

/// Flows over some of the NICs: of the values that spread all eight functions evenly, the planner
/// takes one that keeps the flows' NICs on lines of their own (eth0<->eth4 and eth1<->eth5 on
/// four IRQs, port 4 changed), where the flow-blind choice (port 6, the later port) puts eth4
/// and eth5 on eth0's and eth1's lines and leaves the two flows two CPUs. Names that are no
/// function, or a NIC in two flows, are refused.
#[test]
fn flows_keep_their_nics_apart_among_the_even_spreads() {
    use irqlab_sim::plan::affinity::Flow;
    let p = Population::load(
        &bensley(),
        &cards(&["esb-e3=2", "port4=2", "port6=2", "esb-d28=2"]),
    )
    .unwrap();
    let flows: Vec<Flow> = ["eth0:eth4", "eth1:eth5"]
        .iter()
        .map(|f| f.parse().unwrap())
        .collect();
    let blind = p.plan().unwrap();
    let aware = p.plan_for(&flows).unwrap();
    let values = |plan: &irqlab_sim::plan::swizzle::SwizzlePlan| -> Vec<(String, u8)> {
        plan.registers
            .iter()
            .map(|r| (r.port.clone(), r.after))
            .collect()
    };
    let v = |a: u8, b: u8, c: u8| {
        vec![
            ("port2".to_string(), a),
            ("port4".to_string(), b),
            ("port6".to_string(), c),
        ]
    };
    assert_eq!(values(&blind), v(0, 0, 2));
    assert_eq!(values(&aware), v(0, 2, 0));
    // Both spread all eight functions two to an IRQ.
    assert_eq!((blind.busiest_after, aware.busiest_after), (2, 2));
    let irq = |plan: &irqlab_sim::plan::swizzle::SwizzlePlan, n: &str| {
        plan.functions
            .iter()
            .find(|f| f.name == n)
            .unwrap()
            .irq_after
            .unwrap()
    };
    let flow_irqs = |plan| {
        let mut v: Vec<u8> = ["eth0", "eth4", "eth1", "eth5"]
            .iter()
            .map(|n| irq(plan, n))
            .collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    assert_eq!(flow_irqs(&blind), 2);
    assert_eq!(flow_irqs(&aware), 4);
    // Flows over every NIC: the same values as without flows (Table 3's swizzled row).
    let all: Vec<Flow> = ["eth0:eth1", "eth2:eth3", "eth4:eth5", "eth6:eth7"]
        .iter()
        .map(|f| f.parse().unwrap())
        .collect();
    assert_eq!(values(&p.plan_for(&all).unwrap()), values(&blind));
    let e = p
        .plan_for(&["eth0:eth9".parse().unwrap()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--flow") && e.contains("'eth9'") && e.contains("eth7"),
        "{e}"
    );
    let e = p
        .plan_for(&["eth0:eth1".parse().unwrap(), "eth1:eth2".parse().unwrap()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("'eth1' is in two flows"), "{e}");
}

/// A platform that cannot be is refused by `plan` as by `sim`, naming the file's line: a PIRQ
/// wire past the IO-APIC's last pin.
#[test]
fn impossible_platforms_are_refused_with_the_line() {
    let text = std::fs::read_to_string(bensley()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let four = cards(&["esb-e3=2", "port4=2", "port6=2", "esb-d28=2"]);
    let pin24 = text.replacen("to_line = 19", "to_line = 24", 1);
    assert_ne!(pin24, text);
    let path = dir.path().join("pin24.toml");
    std::fs::write(&path, &pin24).unwrap();
    let e = Population::load(&path, &four).err().unwrap().to_string();
    let line = pin24.lines().position(|l| l == "to_line = 24").unwrap() + 1;
    assert!(
        e.contains(&format!("pin24.toml:{line}:")) && e.contains("pins 0-23"),
        "{e}"
    );
}
