//! `irqlab plan affinity --host` end to end: the plan of a fake host (two sockets of two cores,
//! a multi-queue NIC with rx and tx vectors, one with a managed queue, a virtio NIC; see
//! `crates/host/tests/fake_host`) and its commands, nothing written without `--apply`,
//! `--apply` then `--restore` back to the same bytes, irqbalance named, bad flags and missing
//! NICs named, `--apply` refused without root; `--json` of the plan and of the apply validated
//! against the shipped schema, and refused before anything is set when it cannot be written;
//! and, as root, the real NIC queue IRQs of this
//! machine moved and put back (skipped with the reason where it cannot run). Every run keeps
//! its state in a directory of its own (`IRQLAB_STATE_DIR`).

#[path = "../../host/tests/fake_host/mod.rs"]
mod fake_host;
mod hostenv;

use assert_cmd::Command;
use fake_host::FakeHost;
use predicates::prelude::*;

fn irqlab(h: &FakeHost) -> Command {
    let mut c = Command::cargo_bin("irqlab").unwrap();
    c.env("IRQLAB_STATE_DIR", h.state_dir());
    c
}

/// `plan affinity --host --root TREE ARGS`.
fn on_tree(h: &FakeHost, args: &[&str]) -> Command {
    let mut c = irqlab(h);
    c.args(["plan", "affinity", "--host", "--root"])
        .arg(h.root())
        .args(args);
    c
}

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The whole text for the fake host with eth0 forwarding to eth1: three queues (eth0's two, and
/// eth1's one that is not managed) on four CPUs, so rule 1: queue 0's pair in socket 0 (L3
/// shared), eth0's queue 1 alone in socket 1; the link IRQ, the managed queue and the NIC in no
/// flow left alone, with why; the commands; and no file of the tree changed.
#[test]
fn the_plan_of_a_fake_host_and_its_commands_change_nothing() {
    let h = FakeHost::standard();
    let before = h.snapshot();
    let out = stdout(&mut on_tree(&h, &["--flow", "eth0:eth1"]));
    assert_eq!(h.snapshot(), before, "the plan alone wrote to the tree");
    let root = h.root().display().to_string();
    insta::assert_snapshot!("fake_host_plan", out.replace(&root, "[TREE]"));
    assert!(
        out.contains("  echo 1 > /proc/irq/61/smp_affinity\n"),
        "{out}"
    );
    assert!(
        out.contains("  echo 2 > /proc/irq/70/smp_affinity\n"),
        "{out}"
    );
    assert!(
        !out.contains("/proc/irq/71/"),
        "the managed IRQ is planned: {out}"
    );
    assert!(out.contains("Nothing was changed."), "{out}");
}

/// Without flows every NIC is a flow of its own: eth0's two queues, eth1's one, eth2's one (its
/// rx and tx together), four queues on four CPUs.
#[test]
fn without_flows_each_nic_is_its_own() {
    let h = FakeHost::standard();
    let out = stdout(&mut on_tree(&h, &[]));
    assert!(out.contains("Flows: eth0, eth1, eth2 (each NIC"), "{out}");
    // A row of the plan: IRQ, NIC, queue, CPU, mask, now.
    let table = &out[out.find("IRQ  NIC").expect("a plan table")..];
    let cpu = |irq: u32| {
        table
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 4 && f[0] == irq.to_string() && f[1].starts_with("eth"))
            .and_then(|f| {
                f.into_iter()
                    .find(|c| c.starts_with("cpu"))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| panic!("IRQ {irq} not planned: {out}"))
    };
    assert_eq!(
        cpu(38),
        cpu(39),
        "virtio's rx and tx of queue 0 apart: {out}"
    );
    let mut cpus = vec![cpu(61), cpu(63), cpu(70), cpu(38)];
    cpus.sort();
    cpus.dedup();
    assert_eq!(cpus.len(), 4, "rule 1: a CPU per queue: {out}");
}

/// `--apply` sets the planned masks, skips the managed IRQ (named), keeps the old masks for
/// `--restore`, refuses a second `--apply`; `--restore` puts every byte back; a second
/// `--restore` has nothing to do.
#[test]
fn apply_then_restore_puts_every_byte_back() {
    let h = FakeHost::standard();
    let before = h.snapshot();
    let out = stdout(&mut on_tree(&h, &["--flow", "eth0:eth1", "--apply"]));
    assert!(
        out.contains("Applying (the old masks are saved first):"),
        "{out}"
    );
    assert!(out.contains("Applied: 5 IRQs set."), "{out}");
    assert_eq!(h.mask(61), "1\n");
    assert_eq!(h.mask(70), "2\n");
    assert_eq!(h.mask(63), "4\n");
    assert_eq!(h.mask(71), "f\n");
    assert!(h.state_dir().join("affinity-applied.json").exists());
    // The plan is in force: a plan says so, a second apply is refused and changes nothing.
    let plan = stdout(&mut on_tree(&h, &["--flow", "eth0:eth1"]));
    assert!(plan.contains("An applied plan of irqlab"), "{plan}");
    let applied = h.snapshot();
    on_tree(&h, &["--apply"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("--restore"));
    assert_eq!(h.snapshot(), applied);

    let out = stdout(&mut on_tree(&h, &["--restore"]));
    assert!(out.starts_with("Restored the masks saved in "), "{out}");
    assert_eq!(
        h.snapshot(),
        before,
        "--restore did not put every byte back"
    );
    let out = stdout(&mut on_tree(&h, &["--restore"]));
    assert!(out.starts_with("Nothing to restore"), "{out}");
}

/// A plan of IRQs that already have their masks changes nothing, and says so.
#[test]
fn a_plan_already_in_place_has_nothing_to_apply() {
    let h = FakeHost::standard();
    for irq in [38, 39] {
        h.irq(irq, "1", "0", "0");
    }
    let out = stdout(&mut on_tree(&h, &["--nic", "eth2", "--apply"]));
    assert!(
        out.contains("Nothing to change: every IRQ already has its planned mask."),
        "{out}"
    );
    assert!(!h.state_dir().join("affinity-applied.json").exists());
}

/// irqbalance is named with how to keep it off the planned IRQs; irqlab does not stop it.
#[test]
fn irqbalance_is_named_with_the_way_to_keep_it_off() {
    let h = FakeHost::standard();
    h.process(4242, "irqbalance");
    let out = stdout(&mut on_tree(&h, &["--nic", "eth2"]));
    assert!(
        out.contains("irqbalance runs (pid 4242)")
            && out.contains("IRQBALANCE_ARGS=\"--banirq=38 --banirq=39\"")
            && out.contains("/etc/default/irqbalance")
            && out.contains("/etc/sysconfig/irqbalance")
            && out.contains("systemctl stop irqbalance"),
        "{out}"
    );
    on_tree(&h, &["--nic", "eth2", "--apply"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "irqlab: warning: irqbalance is running (pid 4242)",
        ));
}

/// A flow naming a NIC the host does not have lists the NICs there are.
#[test]
fn a_flow_naming_a_missing_nic_lists_the_nics_there_are() {
    let h = FakeHost::standard();
    on_tree(&h, &["--flow", "eth0:eth9"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains(
            "--flow eth0:eth9: this host has no NIC 'eth9' with a device; its NICs: eth0, eth1, \
             eth2",
        ));
    on_tree(&h, &["--flow", "eth0:eth1", "--nic", "eth1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--nic eth1: NIC 'eth1' is in another flow too",
        ));
}

/// Flags of one mode in the other, and host flags without --host, are refused by name.
#[test]
fn bad_flags_are_named() {
    let h = FakeHost::standard();
    for (args, says) in [
        (
            &["--host", "--card", "port4=2"][..],
            "'--host' cannot be used with '--card",
        ),
        (
            &["--host", "server-2006-bensley-5000p"],
            "'--host' cannot be used with '[PLATFORM]'",
        ),
        (
            &["--host", "--swizzle"],
            "'--host' cannot be used with '--swizzle'",
        ),
        (
            &["--host", "--apply", "--restore"],
            "'--apply' cannot be used with '--restore'",
        ),
        (
            &["--host", "--restore", "--flow", "a:b"],
            "'--restore' cannot be used with '--flow",
        ),
        (&["--host", "--flow", "eth0"], "expected NIC:NIC"),
        (&["--apply"], "--host"),
        (&["--nic", "eth0"], "--host"),
        (
            &[
                "server-2006-bensley-5000p",
                "--card",
                "port4=2",
                "--flow",
                "eth0:eth1",
                "--apply",
            ],
            "'[PLATFORM]' cannot be used with '--apply'",
        ),
    ] {
        irqlab(&h)
            .args(["plan", "affinity"])
            .args(args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty())
            .stderr(predicate::str::contains(says));
    }
    irqlab(&h)
        .args(["plan", "affinity", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--host").and(predicate::str::contains("--restore")));
}

/// `--apply` and `--restore` on the live system need root, and say so before reading anything.
/// As root, the refusal is seen by running irqlab as nobody (setpriv).
#[test]
fn apply_without_root_is_refused() {
    let bin = hostenv::irqlab();
    for flag in ["--apply", "--restore"] {
        let mut c = if hostenv::is_root() {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(&bin);
            c
        } else {
            std::process::Command::new(&bin)
        };
        c.args(["plan", "affinity", "--host", flag]);
        let out = match c.output() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("skipped: cannot run irqlab as another user ({e})");
                return;
            }
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains("irqlab: error: not root:")
                && err.contains(flag)
                && err.contains("run it with sudo"),
            "{flag}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// As root, on this machine: `--apply` moves the NIC queue IRQs the plan names (their masks
/// read back as planned), and `--restore` puts the old masks back byte for byte.
#[test]
fn the_real_nic_queues_move_and_come_back() {
    if !hostenv::is_root() {
        eprintln!("skipped: not root (writing /proc/irq/N/smp_affinity needs root)");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| -> String {
        let out = Command::cargo_bin("irqlab")
            .unwrap()
            .env("IRQLAB_STATE_DIR", state.path())
            .args(["plan", "affinity", "--host"])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!(
            "$ irqlab plan affinity --host {}\n{text}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{:?}", out.status);
        text
    };
    let plan = run(&[]);
    // "  echo MASK > /proc/irq/N/smp_affinity"
    let planned: Vec<(u32, String)> = plan
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("  echo ")?;
            let (mask, file) = rest.split_once(" > ")?;
            let irq = file
                .strip_prefix("/proc/irq/")?
                .strip_suffix("/smp_affinity")?;
            Some((irq.parse().ok()?, mask.to_string()))
        })
        .collect();
    if planned.is_empty() {
        eprintln!(
            "skipped: no NIC queue IRQ here that the plan would move (none, managed, or already \
             as planned)"
        );
        return;
    }
    let file = |irq: u32| format!("/proc/irq/{irq}/smp_affinity");
    let read = |irq: u32| std::fs::read(file(irq)).unwrap();
    let before: Vec<(u32, Vec<u8>)> = planned.iter().map(|(i, _)| (*i, read(*i))).collect();
    // Whatever happens below, the old masks are put back when the test ends.
    struct PutBack(Vec<(u32, Vec<u8>)>);
    impl Drop for PutBack {
        fn drop(&mut self) {
            for (irq, old) in &self.0 {
                let _ = std::fs::write(format!("/proc/irq/{irq}/smp_affinity"), old);
            }
        }
    }
    let _guard = PutBack(before.clone());
    let hex = |m: &str| u128::from_str_radix(&m.trim().replace(',', ""), 16).unwrap();
    let applied = run(&["--apply"]);
    assert!(applied.contains("Applied: "), "{applied}");
    for (irq, mask) in &planned {
        let now = String::from_utf8(read(*irq)).unwrap();
        eprintln!("IRQ {irq}: planned {mask}, read back {}", now.trim());
        assert_eq!(hex(&now), hex(mask), "IRQ {irq}");
    }
    let restored = run(&["--restore"]);
    assert!(restored.starts_with("Restored the masks"), "{restored}");
    for (irq, old) in &before {
        let now = read(*irq);
        eprintln!(
            "IRQ {irq}: was {}, after --restore {}",
            String::from_utf8_lossy(old).trim(),
            String::from_utf8_lossy(&now).trim()
        );
        assert_eq!(&now, old, "IRQ {irq} is not back byte for byte");
    }
    let left: Vec<_> = std::fs::read_dir(state.path())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "state left: {left:?}");
}

fn schema() -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas/irqlab-result.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

fn assert_valid(v: &jsonschema::Validator, json: &serde_json::Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(json)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}:\n{}", errors.join("\n"));
}

/// `--json` writes the host, the plan and what `--apply` set in the envelope every irqlab JSON
/// file has, and the files validate against the shipped schema: the plan, the apply, and a plan
/// made while that apply is in force. The schema can fail: a mask that is not one, a file without
/// what --apply did.
#[test]
fn the_json_of_the_plan_and_the_apply_validates_against_the_schema() {
    let h = FakeHost::standard();
    h.process(4242, "irqbalance");
    let out = tempfile::tempdir().unwrap();
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(out.path().join(name)).unwrap()).unwrap()
    };
    let before = h.snapshot();
    stdout(on_tree(&h, &["--flow", "eth0:eth1", "--json"]).arg(out.path().join("plan.json")));
    assert_eq!(
        h.snapshot(),
        before,
        "the plan with --json wrote to the tree"
    );
    stdout(
        on_tree(&h, &["--flow", "eth0:eth1", "--apply", "--json"])
            .arg(out.path().join("apply.json")),
    );
    stdout(on_tree(&h, &["--nic", "eth2", "--json"]).arg(out.path().join("in-force.json")));
    let v = schema();
    let (plan, apply, in_force) = (read("plan.json"), read("apply.json"), read("in-force.json"));
    for (what, json) in [
        ("plan", &plan),
        ("apply", &apply),
        ("plan in force", &in_force),
    ] {
        assert_valid(&v, json, what);
        assert_eq!(json["kind"], "plan-affinity-host", "{what}");
        assert!(json["host"]["cpus_online"].is_array(), "{what}");
    }
    // What each says.
    assert_eq!(plan["settings"]["flows"], serde_json::json!(["eth0:eth1"]));
    assert_eq!(plan["settings"]["apply"], false);
    assert_eq!(plan["result"]["applied"], serde_json::Value::Null);
    assert_eq!(plan["result"]["host"]["irqbalance_pid"], 4242);
    let planned: Vec<(u64, &str)> = plan["result"]["plan"]["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["irq"].as_u64().unwrap(), i["mask"].as_str().unwrap()))
        .collect();
    assert_eq!(
        planned,
        [(61, "1"), (62, "1"), (70, "2"), (63, "4"), (64, "4")]
    );
    assert_eq!(plan["result"]["plan"]["irqs"][2]["role"]["kind"], "rx_tx");
    assert_eq!(apply["settings"]["apply"], true);
    assert_eq!(apply["result"]["applied"]["end"]["kind"], "committed");
    assert_eq!(
        apply["result"]["applied"]["set"].as_array().unwrap().len(),
        5
    );
    assert_eq!(
        in_force["result"]["in_force"]["irqs"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let mut broken = plan.clone();
    broken["result"]["plan"]["irqs"][0]["mask"] = "cpu0".into();
    assert!(!v.is_valid(&broken));
    let mut broken = apply.clone();
    broken["result"].as_object_mut().unwrap().remove("applied");
    assert!(!v.is_valid(&broken));
    stdout(&mut on_tree(&h, &["--restore"]));
    assert_eq!(h.snapshot(), before);
}

/// A `--json` file that cannot be written is refused before anything is set: the tree and the
/// state directory are as they were.
#[test]
fn an_unwritable_json_file_is_refused_before_the_apply() {
    let h = FakeHost::standard();
    let before = h.snapshot();
    on_tree(
        &h,
        &["--apply", "--json", "/nonexistent-irqlab-dir/plan.json"],
    )
    .assert()
    .code(2)
    .stdout(predicate::str::is_empty())
    .stderr(predicate::str::contains("--json"));
    assert_eq!(h.snapshot(), before);
    assert!(!h.state_dir().join("affinity-applied.json").exists());
    // Not with --restore (it plans nothing), nor without --host.
    on_tree(&h, &["--restore", "--json", "x.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "'--restore' cannot be used with '--json",
        ));
}
