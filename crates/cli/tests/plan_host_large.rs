//! `irqlab plan affinity --host` on generated hosts from 2 to 256 CPUs (4,096 with `--ignored`)
//! ([`FakeHost::large`]): the text and the JSON's host and plan are those the planner printed
//! before it was made linear in the CPU count (issue 37, item 7), byte for byte. The small
//! hosts' texts are snapshots to read; the large ones, and every JSON, are compared by length
//! and FNV-1a digest (a 4,096-CPU text is a megabyte, its JSON ten), recorded from the
//! quadratic planner at commit 78814f1.

#[path = "../../host/tests/fake_host/mod.rs"]
mod fake_host;

use assert_cmd::Command;
use fake_host::{FakeHost, LargeHost, LargeNic, QueueNaming};

fn nics(rx_tx: u32, tx_rx: u32, comp: u32) -> Vec<LargeNic> {
    vec![
        LargeNic {
            name: "eth0",
            queues: rx_tx,
            naming: QueueNaming::RxTx,
        },
        LargeNic {
            name: "eth1",
            queues: tx_rx,
            naming: QueueNaming::TxRx,
        },
        LargeNic {
            name: "eth2",
            queues: comp,
            naming: QueueNaming::Comp,
        },
    ]
}

/// One generated host and the flags it is planned with.
struct Case {
    name: &'static str,
    shape: LargeHost,
    args: &'static [&'static str],
    /// Extra files: (path in the tree, text).
    files: &'static [(&'static str, &'static str)],
    /// IRQs whose `smp_affinity` is read-only (managed by the kernel).
    managed: &'static [u32],
}

const FLOWS: &[&str] = &["--flow", "eth0:eth1", "--nic", "eth2"];

fn cases() -> Vec<Case> {
    vec![
        // 5 queues on 2 CPUs: rule 2.
        Case {
            name: "cpus2",
            shape: LargeHost {
                cpus: 2,
                sockets: 1,
                smt: 2,
                nics: nics(2, 2, 1),
            },
            args: &[],
            files: &[],
            managed: &[],
        },
        // 4 pairs and 8 singles on 16 CPUs: rule 1, every CPU taken; eth1's queue 0 managed.
        Case {
            name: "cpus16",
            shape: LargeHost {
                cpus: 16,
                sockets: 2,
                smt: 2,
                nics: nics(4, 4, 8),
            },
            args: FLOWS,
            files: &[],
            managed: &[1009],
        },
        // 96 queues on 59 CPUs (five isolated or tickless): rule 2, pairs split.
        Case {
            name: "cpus64_rule2",
            shape: LargeHost {
                cpus: 64,
                sockets: 4,
                smt: 2,
                nics: nics(16, 32, 48),
            },
            args: FLOWS,
            files: &[
                ("sys/devices/system/cpu/isolated", "5,9-11\n"),
                ("sys/devices/system/cpu/nohz_full", "12\n"),
            ],
            managed: &[],
        },
        // 32 queues on 64 CPUs in 8 sockets without SMT, each NIC its own flow: rule 1.
        Case {
            name: "cpus64_smt1",
            shape: LargeHost {
                cpus: 64,
                sockets: 8,
                smt: 1,
                nics: nics(8, 8, 16),
            },
            args: &[],
            files: &[],
            managed: &[],
        },
        // 448 queues on 256 CPUs: rule 2.
        Case {
            name: "cpus256_rule2",
            shape: LargeHost::with_three_nics(256, 4),
            args: FLOWS,
            files: &[],
            managed: &[],
        },
    ]
}

/// 448 queues on 4,096 CPUs: rule 1. Its tree has some 45,000 files and its JSON 91 MB (each
/// CPU lists the CPUs sharing its caches), two minutes of a debug build: run by hand
/// (`cargo test -p irqlab --test plan_host_large -- --ignored`) and by `bench/plan-host.sh`'s
/// sizes, not in every `cargo test`.
fn case_4096() -> Case {
    Case {
        name: "cpus4096",
        shape: LargeHost::with_three_nics(4096, 8),
        args: FLOWS,
        files: &[],
        managed: &[],
    }
}

/// FNV-1a, 64 bits: a digest that needs no crate and never changes.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The text and the JSON result (host, plan) of a case, the tree's path as `[TREE]`.
fn plan(case: &Case) -> (String, String) {
    let h = FakeHost::large(&case.shape);
    for (path, text) in case.files {
        h.file(path, text);
    }
    for &irq in case.managed {
        h.make_managed(irq);
    }
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("plan.json");
    let out = Command::cargo_bin("irqlab")
        .unwrap()
        .env("IRQLAB_STATE_DIR", h.state_dir())
        .args(["plan", "affinity", "--host", "--root"])
        .arg(h.root())
        .args(case.args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        case.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let root = h.root().display().to_string();
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&root, "[TREE]");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let result = serde_json::to_string_pretty(&v["result"])
        .unwrap()
        .replace(&root, "[TREE]");
    (text, result)
}

#[test]
fn plans_of_generated_hosts_are_as_the_quadratic_planner_printed_them() {
    let mut got = Vec::new();
    for case in cases() {
        let (text, json) = plan(&case);
        if case.shape.cpus <= 64 {
            insta::assert_snapshot!(format!("large_{}", case.name), text);
        }
        got.push(digest_line(&case, &text, &json));
    }
    insta::assert_snapshot!("large_digests", got.join("\n"));
}

#[test]
#[ignore = "two minutes in a debug build: run with --ignored (see case_4096)"]
fn the_4096_cpu_plan_is_as_the_quadratic_planner_printed_it() {
    let case = case_4096();
    let (text, json) = plan(&case);
    assert_eq!(
        digest_line(&case, &text, &json),
        "cpus4096: text 2116700 bytes 8967751385d4acd3, json 91094842 bytes ded1ee56f8977730"
    );
}

/// A case's text and JSON by length and digest.
fn digest_line(case: &Case, text: &str, json: &str) -> String {
    format!(
        "{}: text {} bytes {:016x}, json {} bytes {:016x}",
        case.name,
        text.len(),
        fnv1a(text.as_bytes()),
        json.len(),
        fnv1a(json.as_bytes())
    )
}
