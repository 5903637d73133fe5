//! Error reporting of `Scenario::load`: every refusal names the file, line and column (or the
//! `--set` flag), what was expected, and how to fix it.
//!
//! Each test copies the real seed-000 workstation scenario, platform and kernel into a temporary
//! directory, makes one textual change and loads the result. Expected positions are computed
//! from the modified text, never hard-coded.

mod common;

use irqlab_sim::scenario::{Origin, Scenario, ScenarioError};
use std::path::{Path, PathBuf};

const SCENARIO: &str = "ws.toml";
const PLATFORM: &str = "platform.toml";
const KERNEL: &str = "kernel.toml";

fn repo_file(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Index of the one line that sets `key` (`key = ...`, ignoring indentation), outside the
/// `[range.*]` tables (which give the same key its range).
fn key_line(text: &str, key: &str) -> usize {
    let mut in_range = false;
    let hits: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim_start();
            if l.starts_with('[') {
                in_range = l.starts_with("[range");
            }
            !in_range
                && l.strip_prefix(key)
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits.len(), 1, "key '{key}' must be set on exactly one line");
    hits[0]
}

fn edit_lines(text: &str, edit: impl FnOnce(&mut Vec<String>)) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    edit(&mut lines);
    lines.join("\n") + "\n"
}

/// Replace the line setting `key` with `key = value`.
fn set(text: &str, key: &str, value: &str) -> String {
    let i = key_line(text, key);
    edit_lines(text, |l| l[i] = format!("{key} = {value}"))
}

/// Insert `line` after the line setting `key`.
fn insert_after(text: &str, key: &str, line: &str) -> String {
    let i = key_line(text, key);
    edit_lines(text, |l| l.insert(i + 1, line.to_string()))
}

/// 1-based line and column of the `n`th (0-based) occurrence of `needle`.
fn nth_pos(text: &str, needle: &str, n: usize) -> (usize, usize) {
    let (offset, _) = text
        .match_indices(needle)
        .nth(n)
        .unwrap_or_else(|| panic!("'{needle}' occurs fewer than {} times", n + 1));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = offset - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// 1-based line and column of the only occurrence of `needle`.
fn pos(text: &str, needle: &str) -> (usize, usize) {
    assert_eq!(text.matches(needle).count(), 1, "'{needle}' is not unique");
    nth_pos(text, needle, 0)
}

/// The three real files, copied into a temporary directory.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let fixture = Fixture {
            dir: tempfile::tempdir().expect("temporary directory"),
        };
        let scenario = repo_file("experiments/seed000/ws.toml");
        let scenario = set(&scenario, "platform", &format!("\"{PLATFORM}\""));
        let scenario = set(&scenario, "kernel", &format!("\"{KERNEL}\""));
        fixture.put(SCENARIO, &scenario);
        fixture.put(PLATFORM, &repo_file("platforms/ws-2008-core2-ich9.toml"));
        fixture.put(KERNEL, &repo_file("kernels/linux-2.6.18-i386-up.toml"));
        fixture
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn put(&self, file: &str, text: &str) {
        std::fs::write(self.path(file), text).expect("write fixture file");
    }

    /// Rewrite `file` with `modify` and return its new text.
    fn write(&self, file: &str, modify: impl Fn(&str) -> String) -> String {
        let old = std::fs::read_to_string(self.path(file)).expect("read fixture file");
        let new = modify(&old);
        assert_ne!(old, new, "the modification of {file} changed nothing");
        self.put(file, &new);
        new
    }

    fn load(&self, overrides: &[&str]) -> Result<Scenario, ScenarioError> {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Scenario::load(self.path(SCENARIO), &overrides)
    }

    fn fail(&self, overrides: &[&str]) -> ScenarioError {
        match self.load(overrides) {
            Ok(_) => panic!("loading with {overrides:?} succeeded, but should have failed"),
            Err(e) => e,
        }
    }
}

fn assert_file_origin(origin: &Origin, path: &Path, at: (usize, usize)) {
    let expected = Origin::File {
        path: path.to_owned(),
        line: at.0,
        column: at.1,
    };
    assert_eq!(*origin, expected);
}

fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "'{text}' does not mention '{part}'");
    }
}

/// A `Syntax` error at `path:line:column`; returns the message.
fn syntax(err: ScenarioError, path: &Path, at: (usize, usize)) -> String {
    let shown = err.to_string();
    let ScenarioError::Syntax { origin, message } = err else {
        panic!("expected a syntax error, got {err:?}");
    };
    assert_file_origin(&origin, path, at);
    assert_eq!(
        shown,
        format!("{}:{}:{}: {message}", path.display(), at.0, at.1)
    );
    message
}

/// An `Override` error for `flag`; returns the message.
fn override_error(err: ScenarioError, expected_flag: &str) -> String {
    let shown = err.to_string();
    let ScenarioError::Override { flag, message } = err else {
        panic!("expected an override error, got {err:?}");
    };
    assert_eq!(flag, expected_flag);
    assert_eq!(shown, format!("--set {flag}: {message}"));
    message
}

/// An `Invalid` error for `key` from `path:line:column`; returns the message.
fn invalid_in_file(
    err: ScenarioError,
    expected_key: &str,
    path: &Path,
    at: (usize, usize),
) -> String {
    let shown = err.to_string();
    let ScenarioError::Invalid {
        origin,
        key,
        message,
    } = err
    else {
        panic!("expected an invalid-configuration error, got {err:?}");
    };
    assert_eq!(key, expected_key);
    assert_file_origin(&origin, path, at);
    assert_eq!(
        shown,
        format!(
            "{}:{}:{}: {expected_key}: {message}",
            path.display(),
            at.0,
            at.1
        )
    );
    message
}

/// An `Invalid` error for `key` that came from `--set flag`; returns the message.
fn invalid_from_flag(err: ScenarioError, expected_key: &str, flag: &str) -> String {
    let shown = err.to_string();
    let ScenarioError::Invalid {
        origin,
        key,
        message,
    } = err
    else {
        panic!("expected an invalid-configuration error, got {err:?}");
    };
    assert_eq!(key, expected_key);
    assert_eq!(origin, Origin::Flag(flag.to_string()));
    assert_eq!(shown, format!("--set {flag}: {expected_key}: {message}"));
    message
}

// ---- sanity -------------------------------------------------------------------------------

#[test]
fn unmodified_copy_loads_and_runs() {
    let f = Fixture::new();
    let scenario = f.load(&[]).expect("the copied scenario loads");
    assert_eq!(scenario.platform_path, f.path(PLATFORM));
    assert_eq!(scenario.kernel_path, f.path(KERNEL));
    let result = scenario.run(1, 5, 0).expect("the copied scenario runs");
    assert_eq!(result.tasklet.count(), 5);
}

// ---- syntax errors in the files -----------------------------------------------------------

#[test]
fn unknown_key_in_scenario_file() {
    let f = Fixture::new();
    let text = f.write(SCENARIO, |t| insert_after(t, "samples", "sampels = 3"));
    let message = syntax(f.fail(&[]), &f.path(SCENARIO), pos(&text, "sampels"));
    assert_contains(
        &message,
        &["unknown field", "sampels", "expected", "samples"],
    );
}

#[test]
fn wrong_type_in_platform_file() {
    let f = Fixture::new();
    let text = f.write(PLATFORM, |t| set(t, "halt_exit_ns", "\"fast\""));
    let message = syntax(f.fail(&[]), &f.path(PLATFORM), pos(&text, "\"fast\""));
    assert_contains(&message, &["fast", "a number such as 3.0e9"]);
}

#[test]
fn unknown_key_in_kernel_instructions() {
    let f = Fixture::new();
    let text = f.write(KERNEL, |t| insert_after(t, "do_irq", "do_irqq = 5"));
    let message = syntax(f.fail(&[]), &f.path(KERNEL), pos(&text, "do_irqq"));
    assert_contains(
        &message,
        &[
            "unknown field",
            "do_irqq",
            "expected",
            "do_irq",
            "entry_stub",
        ],
    );
}

/// A kernel file's `family` picks the tables it is read as and the model that runs the
/// scenario: an unknown one is named where it stands, and a family whose model cannot run the
/// scenario's devices says which kind it runs.
#[test]
fn the_kernels_family_is_named_where_it_stands_and_picks_the_model() {
    let f = Fixture::new();
    let text = f.write(KERNEL, |t| set(t, "family", "\"solaris\""));
    let message = syntax(f.fail(&[]), &f.path(KERNEL), pos(&text, "\"solaris\""));
    assert_contains(
        &message,
        &["unknown variant", "solaris", "linux", "freebsd"],
    );
    f.put(KERNEL, &repo_file("kernels/freebsd-1998-07-i386.toml"));
    let e = f.fail(&[]).to_string();
    assert_contains(&e, &["delivery", "give \"xtpic\""]);
    let e = f.fail(&["delivery=\"xtpic\""]).to_string();
    assert_contains(
        &e,
        &["device.0.kind", "kind = \"card\"", "needs a Linux kernel"],
    );
}

// ---- --set errors -------------------------------------------------------------------------

/// Bad `--set` flags: each error names the flag, what was expected and how to fix it.
#[test]
fn override_errors_name_the_flag() {
    let cases: &[(&str, &[&str])] = &[
        // An unknown key lists the keys at that level.
        (
            "platform.cpu.clok_hz=1",
            &["clok_hz", "platform.cpu", "clock_hz", "halt_exit_ns"],
        ),
        (
            "platform.cpu.clock_hz=fast",
            &["platform.cpu.clock_hz", "a decimal number", "a string"],
        ),
        ("samples=1.5", &["samples", "a whole number", "1.5"]),
        (
            "platform.cpu.clock_hz",
            &["key=value", "platform.cpu.clock_hz=2.0e9"],
        ),
        (
            "device.5.link_width=1",
            &["device", "1 element, index 0", "5", "past the end"],
        ),
        ("device.x.link_width=1", &["device", "list", "index"]),
    ];
    for (flag, says) in cases {
        let f = Fixture::new();
        let message = override_error(f.fail(&[flag]), flag);
        assert_contains(&message, says);
    }
}

#[test]
fn override_into_empty_device_list_does_not_panic() {
    let f = Fixture::new();
    f.write(SCENARIO, |t| {
        let head = &t[..t.find("[[device]]").expect("a device table")];
        format!("{head}device = []\n")
    });
    let flag = "device.x.link_width=1";
    let result = std::panic::catch_unwind(|| f.load(&[flag]));
    let err = result.expect("load must not panic").unwrap_err();
    override_error(err, flag);
}

#[test]
fn override_unknown_delivery_names_the_choices() {
    let f = Fixture::new();
    let flag = "delivery=sometimes";
    let message = override_error(f.fail(&[flag]), flag);
    assert_contains(&message, &["sometimes", "xtpic", "ioapic", "msi"]);
}

#[test]
fn override_error_names_only_the_bad_flag() {
    let f = Fixture::new();
    let bad = "delivery=sometimes";
    let message = override_error(f.fail(&["platform.cpu.clock_hz=2000000000", bad]), bad);
    assert_contains(&message, &["sometimes", "xtpic"]);
}

// ---- hardware refusals --------------------------------------------------------------------

/// Values hardware or the kernel cannot have, each refused with the file, line and column of
/// the key, what was expected and how to fix it.
#[test]
fn hardware_refusals_name_the_line() {
    // (file, key as written, new value, key the error names, what the message must say)
    let cases: &[(&str, &str, &str, &str, &[&str])] = &[
        (
            SCENARIO,
            "msi_vector",
            "20",
            "device.0.msi_vector",
            &["20", "32..255", "between 32 and 255"],
        ),
        (
            PLATFORM,
            "pirq_pic_irq",
            "[11, 10, 16, 10, 11, 10, 11, 10]",
            "platform.ich.pirq_pic_irq",
            &["PIRQC", "16", "0-15", "-1 for not routed"],
        ),
        (
            SCENARIO,
            "interval_us",
            "-1",
            "device.0.interval_us",
            &["-1 us", "0.001 to"],
        ),
        (SCENARIO, "samples", "0", "samples", &["at least 1"]),
        (
            SCENARIO,
            "status_offset",
            "0x20000",
            "device.0.status_offset",
            &["0x20000", "outside reg_bar", "within its BAR"],
        ),
        (
            SCENARIO,
            "signature_bar",
            "0xFAFF8000",
            "device.0.signature_bar",
            &[
                "overlaps",
                "reg_bar of device 'exerciser'",
                "own address range",
            ],
        ),
        (
            SCENARIO,
            "reg_bar",
            "0xFEE00000",
            "device.0.reg_bar",
            &["overlaps", "interrupt window"],
        ),
    ];
    for (file, key, value, error_key, says) in cases {
        let f = Fixture::new();
        let text = f.write(file, |t| set(t, key, value));
        let message = invalid_in_file(
            f.fail(&[]),
            error_key,
            &f.path(file),
            pos(&text, &format!("{key} =")),
        );
        assert_contains(&message, says);
    }
}

/// Values the files write as text or a number and the model holds as its own types (a
/// bus:device:function, an INTx pin, a link's generation and width, a generator) are parsed as
/// the file is read: a bad one is refused at its value's line and column, with how to write it.
#[test]
fn typed_values_are_refused_where_they_are_read() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "intx_pin",
            "\"E\"",
            &["'E'", "INTA", "INTD", "\"A\"..\"D\""],
        ),
        ("link_width", "3", &["x3", "x1", "x16"]),
        ("link_generation", "6", &["generation 6", "use 1", "5 (32)"]),
        (
            "interrupts",
            "\"sometimes\"",
            &["sometimes", "`poisson`", "`periodic`"],
        ),
        ("bdf", "\"3:40.0\"", &["3:40.0", "device must be 0..31"]),
    ];
    for (key, value, says) in cases {
        let f = Fixture::new();
        let text = f.write(SCENARIO, |t| set(t, key, value));
        let err = f.fail(&[]);
        let ScenarioError::Syntax {
            origin: Origin::File { path, line, .. },
            message,
        } = &err
        else {
            panic!("{key}: expected an error in the file, got {err:?}");
        };
        assert_eq!(path, &f.path(SCENARIO));
        assert_eq!(
            *line,
            pos(&text, &format!("{key} =")).0,
            "{key}: the value's line"
        );
        assert_contains(message, says);
    }
}

/// The same from a flag: the flag is named with what the model accepts.
fn typed_from_flag(err: ScenarioError, flag: &str) -> String {
    let ScenarioError::Override { flag: got, message } = err else {
        panic!("expected an error naming the flag, got {err:?}");
    };
    assert_eq!(got, flag);
    message
}

#[test]
fn msi_vector_above_255_from_flag() {
    // The file names a vector, so the flag has a value to replace.
    let f = Fixture::new();
    f.write(SCENARIO, |t| set(t, "msi_vector", "65"));
    let flag = "device.0.msi_vector=256";
    let message = invalid_from_flag(f.fail(&[flag]), "device.0.msi_vector", flag);
    assert_contains(&message, &["256", "32..255", "between 32 and 255"]);
}

#[test]
fn msi_vector_from_flag_over_the_kernels_choice() {
    let f = Fixture::new();
    let flag = "device.0.msi_vector=256";
    let message = invalid_from_flag(f.fail(&[flag]), "device.0.msi_vector", flag);
    assert_contains(&message, &["256", "32..255"]);
}

/// The scenario with a quiet copy of its device, 'second', at 004:00:0 in root port `port`,
/// with BARs of its own.
fn with_second_device(t: &str, port: &str) -> String {
    let second = common::device_table(t)
        .replace("name = \"exerciser\"", "name = \"second\"")
        .replace("bdf = \"003:00:0\"", "bdf = \"004:00:0\"")
        .replace("port = \"peg\"", &format!("port = \"{port}\""))
        .replace("reg_bar = 0xFAFF0000", "reg_bar = 0xFAFE0000")
        .replace("signature_bar = 0xF9000000", "signature_bar = 0xF9100000")
        .replace("interrupts = \"poisson\"", "interrupts = \"none\"");
    format!("{t}\n{second}")
}

#[test]
fn two_devices_on_one_msi_vector() {
    let f = Fixture::new();
    let text = f.write(SCENARIO, |t| {
        with_second_device(&set(t, "msi_vector", "65"), "ich-pcie1")
    });
    let message = invalid_in_file(
        f.fail(&[]),
        "device.1.msi_vector",
        &f.path(SCENARIO),
        nth_pos(&text, "msi_vector = 65", 1),
    );
    assert_contains(
        &message,
        &["exerciser", "second", "65", "give each its own vector"],
    );
}

#[test]
fn dmi_width_not_in_pcie_from_flag() {
    let f = Fixture::new();
    let flag = "platform.link.dmi.width=5";
    let message = invalid_from_flag(f.fail(&[flag]), "platform.link.dmi.width", flag);
    assert_contains(&message, &["link 'dmi'", "x5", "x1", "x4", "x16"]);
}

/// The PIRQ lines' wires to the IO-APIC: a pin it does not have, a line driving two pins, and a
/// device on a line with no wire.
#[test]
fn pirq_wires_are_checked() {
    let f = Fixture::new();
    let flag = "platform.wire.7.to_line=24";
    let message = invalid_from_flag(f.fail(&[flag]), "platform.wire.7.to_line", flag);
    assert_contains(&message, &["PIRQH", "pin 24", "0-23"]);
    let flag = "platform.wire.1.from_line=0";
    let message = invalid_from_flag(f.fail(&[flag]), "platform.wire.1.from_line", flag);
    assert_contains(&message, &["PIRQA", "pins 16 and 17", "one pin"]);
    // The router's wires go to the IO-APIC; the 8259 input is PIRQx_ROUT's.
    let flag = "platform.wire.0.to=pics";
    let message = invalid_from_flag(f.fail(&[flag]), "platform.wire.0.to", flag);
    assert_contains(&message, &["'pics'", "IO-APIC", "pirq_pic_irq"]);
    // The exerciser's INTA is PIRQA; without PIRQA's wire, IO-APIC delivery has no pin to
    // program (MSI and XT-PIC need none).
    f.write(PLATFORM, |t| {
        t.replacen(
            "[[wire]]\nfrom = \"pirq-router\"\nfrom_line = 0\nto = \"ioapic\"\nto_line = 16\n",
            "",
            1,
        )
    });
    let text = std::fs::read_to_string(f.path(SCENARIO)).unwrap();
    let message = invalid_in_file(
        f.fail(&["delivery=ioapic"]),
        "device.0.intx_pin",
        &f.path(SCENARIO),
        pos(&text, "intx_pin ="),
    );
    assert_contains(
        &message,
        &["'exerciser' signals on PIRQA", "no [[wire]]", "line 0"],
    );
    assert!(f.load(&["delivery=msi"]).is_ok() && f.load(&["delivery=xtpic"]).is_ok());
}

/// The topology is checked as the platform is read: a bad part or link is named with its line,
/// and a device must sit in a root port of the platform, one per port.
#[test]
fn topology_refusals_name_the_part_or_link() {
    let f = Fixture::new();
    let text = f.write(PLATFORM, |t| set(t, "request_phase_clocks", "20000000"));
    let message = invalid_in_file(
        f.fail(&[]),
        "platform.link.fsb.request_phase_clocks",
        &f.path(PLATFORM),
        pos(&text, "request_phase_clocks ="),
    );
    assert_contains(&message, &["link 'fsb'", "20000000 clocks", "0 to 1000000"]);

    let f = Fixture::new();
    let text = f.write(PLATFORM, |t| {
        t.replace("[part.peg]\n", "[part.peg]\napic_id = 3\n")
    });
    let message = invalid_in_file(
        f.fail(&[]),
        "platform.part.peg.apic_id",
        &f.path(PLATFORM),
        pos(&text, "apic_id = 3"),
    );
    assert_contains(
        &message,
        &["part 'peg'", "a bridge has no `apic_id`", "`dev`"],
    );

    let f = Fixture::new();
    let text = f.write(SCENARIO, |t| set(t, "port", "\"dmi-port\""));
    let message = invalid_in_file(
        f.fail(&[]),
        "device.0.port",
        &f.path(SCENARIO),
        pos(&text, "port ="),
    );
    assert_contains(
        &message,
        &["'dmi-port'", "not a root port", "ich-pcie1", "peg"],
    );

    // Two cards in one root port.
    let f = Fixture::new();
    let text = f.write(SCENARIO, |t| with_second_device(t, "peg"));
    let message = invalid_in_file(
        f.fail(&[]),
        "device.1.port",
        &f.path(SCENARIO),
        nth_pos(&text, "port =", 1),
    );
    assert_contains(&message, &["bridge 'peg'", "exerciser-link", "one link"]);
}

// ---- files --------------------------------------------------------------------------------

#[test]
fn missing_platform_file() {
    let f = Fixture::new();
    f.write(SCENARIO, |t| set(t, "platform", "\"missing.toml\""));
    let err = f.fail(&[]);
    let shown = err.to_string();
    let ScenarioError::Io {
        path,
        named_by,
        cause,
    } = err
    else {
        panic!("expected an I/O error, got {err:?}");
    };
    assert_eq!(path, f.path("missing.toml"));
    assert_eq!(cause.kind(), std::io::ErrorKind::NotFound);
    // Which line of which file asked for it, so the user knows what to fix.
    let by = format!("`platform` at {}:", f.path(SCENARIO).display());
    assert!(
        named_by.as_deref().is_some_and(|n| n.starts_with(&by)),
        "{named_by:?}"
    );
    assert!(
        shown.starts_with(&format!(
            "cannot read {} (named by {by}",
            f.path("missing.toml").display()
        )),
        "{shown}"
    );
    assert_eq!(
        shown.matches("os error 2").count(),
        1,
        "the cause once: {shown}"
    );
}

// ---- valid overrides ----------------------------------------------------------------------

#[test]
fn valid_overrides_are_applied() {
    use irqlab_sim::kernel::Delivery;
    let f = Fixture::new();
    let scenario = f
        .load(&["delivery=xtpic", "platform.cpu.clock_hz=2000000000"])
        .expect("valid overrides load");
    assert_eq!(scenario.file.delivery, Delivery::Xtpic);
    assert_eq!(scenario.platform.cpu.clock_hz, 2.0e9);
    // Everything not overridden is as the files say.
    assert_eq!(scenario.file.samples, 20000);
    assert_eq!(scenario.file.platform, PLATFORM);
    assert_eq!(scenario.kernel.linux().instructions.do_irq, 60);
}

// ---- seed 002's parts ---------------------------------------------------------------------

/// Load seed 002's scenario with one flag; it must be refused for `key`, and the message must
/// contain each of `parts`.
fn seed002_refuses(flag: &str, key: &str, parts: &[&str]) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/seed002/fpga.toml");
    let err = Scenario::load(&path, &[flag.to_string()]).expect_err(flag);
    let message = invalid_from_flag(err, key, flag);
    assert_contains(&message, parts);
}

#[test]
fn seed002_configurations_that_cannot_be_are_refused() {
    let fpga = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/seed002/fpga.toml");
    for (flag, says) in [
        (
            "device.0.driver=foo",
            ["`foo`", "`round-trip`", "`generic`"],
        ),
        (
            "device.0.interval_from=later",
            ["`later`", "`trigger`", "`service`"],
        ),
    ] {
        let err = Scenario::load(&fpga, &[flag.to_string()]).expect_err(flag);
        assert_contains(&typed_from_flag(err, flag), &says);
    }
    seed002_refuses(
        "delivery=ioapic",
        "delivery",
        &["kcu116", "round-trip driver", "delivery = \"msi\""],
    );
    seed002_refuses(
        "device.0.msi_capable=false",
        "device.0.msi_capable",
        &["msi_capable = true"],
    );
    seed002_refuses(
        "device.0.bit_error_rate=0.5",
        "device.0.bit_error_rate",
        &["0.5", "outside", "0.0001"],
    );
    seed002_refuses(
        "device.0.dma_write_mb_per_s=9000",
        "device.0.dma_write_mb_per_s",
        &["x8 Gen3", "ask for less"],
    );
    seed002_refuses(
        "device.0.dma_read_bytes=250",
        "device.0.dma_read_bytes",
        &["multiple of 4"],
    );
    seed002_refuses(
        "device.0.dma_read_mb_per_s=-5",
        "device.0.dma_read_mb_per_s",
        &["-5", "outside"],
    );
    seed002_refuses(
        "platform.cpu.idle_states.2.target_residency_us=1",
        "platform.cpu.idle_states.2.target_residency_us",
        &["shallowest first"],
    );
    seed002_refuses(
        "platform.smi.duration_us=-1",
        "platform.smi.duration_us",
        &["outside"],
    );
    seed002_refuses(
        "kernel.idle.latency_limit_us=-1",
        "kernel.idle.latency_limit_us",
        &["outside"],
    );
    seed002_refuses("warmup_samples=99999999999", "warmup_samples", &["warm-up"]);
}

/// One checker for the platform's core, whichever kernel runs on it: the same value is refused
/// with the same limits on seed 000's Linux workstation and seed 004's FreeBSD PC (the two had
/// drifted: 1e11 against 10e9 Hz, 1 s against 1 ms of halt exit).
#[test]
fn the_core_has_one_set_of_limits_for_every_scenario() {
    use irqlab_sim::scenario::Scenario;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenarios = [
        "experiments/seed000/ws.toml",
        "experiments/seed004/pps.toml",
    ];
    let refusal = |scenario: &str, flag: &str| -> Option<String> {
        Scenario::load(repo.join(scenario), &[flag.to_string()])
            .err()
            .map(|e| e.to_string())
    };
    for flag in [
        "platform.cpu.halt_exit_ns=2e6",
        "platform.cpu.clock_hz=2e11",
        "platform.cpu.cycles_per_instruction=0.01",
        "platform.cpu.iret_cycles=2e6",
        "platform.cpu.privilege_change_cycles=-1",
    ] {
        let [a, b] = scenarios.map(|s| refusal(s, flag));
        let (a, b) = (a.expect(flag), b.expect(flag));
        let tail = |m: &str| m[m.find(" is outside").expect(flag)..].to_string();
        assert_eq!(tail(&a), tail(&b), "{flag}");
    }
    // Inside the one set of limits, both take it (seed 004's own limit was 10 GHz).
    for s in scenarios {
        assert_eq!(refusal(s, "platform.cpu.clock_hz=5e10"), None, "{s}");
    }
}
