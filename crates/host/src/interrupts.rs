//! `/proc/interrupts`, as every kernel generation since 2.6 prints it.
//!
//! The row layout changed three times (`kernel/irq/proc.c` `show_interrupts` and, before
//! genirq, `arch/*/kernel/irq.c`):
//!
//! - up to 2.6.17: one type name per line, `%14s` of `hw_interrupt_type.typename`:
//!   `XT-PIC`, `IO-APIC-edge`, `IO-APIC-level`, `PCI-MSI`;
//! - 2.6.18 to 4.x without IRQ domains: chip name and flow name joined by a dash,
//!   ` %8s-%-8s`: `IO-APIC-fasteoi`, `PCI-MSI-edge`, `XT-PIC-XT`, `IR-IO-APIC-fasteoi`;
//! - with IRQ domains (x86 from 4.4): chip, hwirq, then `-flow`: `IO-APIC   2-edge`,
//!   `IR-PCI-MSI 512000-edge`, `PCI-MSIX-0000:00:02.0   1-edge` (per-device MSI domains, 6.x),
//!   and, where `GENERIC_IRQ_SHOW_LEVEL` is set (ARM), `GICv3  27 Level`.
//!
//! After the chip come the handler names, joined by `", "` (a shared line has several). Rows
//! with a name instead of a number (`NMI`, `LOC`, `RES`, ...) are per-CPU classes with a
//! description; `ERR` and `MIS` have a single total.

use crate::error::HostError;
use irqlab_stats::cpus::MAX_CPU;
use irqlab_stats::inventory::{Delivery, Trigger};
use std::path::Path;

/// One parsed row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The number or the name before the colon.
    pub id: String,
    /// Counts, one per CPU column; a named row with a single total (`ERR`) has one.
    pub counts: Vec<u64>,
    /// The chip (`IO-APIC`, `PCI-MSI`, `XT-PIC`), with any `IR-` prefix kept.
    pub chip: Option<String>,
    pub hwirq: Option<String>,
    /// The flow handler or the old type's suffix (`edge`, `fasteoi`, `level`, `XT`).
    pub flow: Option<String>,
    /// `Level` or `Edge` where the kernel prints the trigger itself.
    pub shown_trigger: Option<Trigger>,
    pub actions: Vec<String>,
    /// A named row's description (`Local timer interrupts`).
    pub description: Option<String>,
}

impl Row {
    /// True for the numbered rows (device and platform lines).
    pub fn is_numbered(&self) -> bool {
        self.id.bytes().all(|b| b.is_ascii_digit())
    }

    /// The chip name without the interrupt-remapping prefix.
    fn base_chip(&self) -> Option<&str> {
        self.chip
            .as_deref()
            .map(|c| c.strip_prefix("IR-").unwrap_or(c))
    }

    /// Interrupt remapping is in force (`IR-IO-APIC`, `IR-PCI-MSI`).
    pub fn remapped(&self) -> bool {
        self.chip.as_deref().is_some_and(|c| c.starts_with("IR-"))
    }

    /// How the line is delivered, from the chip name alone. MSI and MSI-X print the same chip
    /// name on most kernels; the inventory tells them apart with sysfs (`msi_irqs/N`).
    pub fn delivery(&self) -> Delivery {
        if !self.is_numbered() {
            return Delivery::PerCpu;
        }
        let Some(chip) = self.base_chip() else {
            return Delivery::Other;
        };
        let upper = chip.to_ascii_uppercase();
        if upper.starts_with("XT-PIC") {
            Delivery::XtPic
        } else if upper.starts_with("IO-APIC") || upper.starts_with("IOAPIC") {
            Delivery::IoApic
        } else if upper.contains("PCI-MSIX") || upper.contains("PCI-MSI-X") {
            // also behind a parent domain's prefix: ITS-PCI-MSIX-..., HV-PCI-MSIX-...
            Delivery::MsiX
        } else if upper.contains("PCI-MSI") || upper.contains("PCIE MSI") {
            Delivery::Msi
        } else if upper.starts_with("ITS-MSI") {
            // ARM's GICv3 ITS translates PCI MSI/MSI-X writes.
            Delivery::Msi
        } else if upper.contains("MSI") {
            // HPET-MSI, DMAR-MSI, platform MSI domains
            Delivery::PlatformMsi
        } else if self.flow.as_deref() == Some("percpu")
            || upper == "LAPIC"
            || upper == "LOCAL-APIC"
        {
            // 2.6 x86_64 showed the Local APIC timer as a numbered `local-APIC-edge` line.
            Delivery::PerCpu
        } else {
            Delivery::Other
        }
    }

    /// The trigger mode as far as `/proc/interrupts` tells it: printed by the kernel, or
    /// implied by the flow (an IO-APIC `fasteoi` line is level-triggered, `edge` is edge). The
    /// 8259's `XT` flow is `handle_level_irq` for every line, whatever the ELCR says, so it is
    /// left open (sysfs `type` answers it on new kernels).
    pub fn trigger(&self) -> Option<Trigger> {
        if let Some(t) = self.shown_trigger {
            return Some(t);
        }
        match self.flow.as_deref()? {
            "edge" => Some(Trigger::Edge),
            "level" => Some(Trigger::Level),
            "fasteoi" if self.delivery() == Delivery::IoApic => Some(Trigger::Level),
            _ => None,
        }
    }
}

/// A whole `/proc/interrupts`.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// CPU numbers of the count columns (`CPU0 CPU2` on a machine with CPU1 offline).
    pub cpus: Vec<u32>,
    pub rows: Vec<Row>,
}

impl Table {
    /// Read and parse `/proc/interrupts` (or a copy of it).
    pub fn read(path: &Path) -> Result<Table, HostError> {
        let text = std::fs::read_to_string(path).map_err(|e| HostError::io(path, e))?;
        Table::parse(&text).map_err(|(line, message)| HostError::Parse {
            path: path.to_path_buf(),
            line,
            message,
        })
    }

    /// Parse the text. Errors carry the 1-based line number.
    pub fn parse(text: &str) -> Result<Table, (usize, String)> {
        let mut lines = text
            .lines()
            .enumerate()
            .skip_while(|(_, l)| l.trim().is_empty());
        // Errors name the header's own line: blank lines may come before it.
        let (at, header) = lines.next().ok_or_else(|| {
            (
                text.lines().count() + 1,
                "no header line: expected one such as 'CPU0 CPU1'".to_string(),
            )
        })?;
        let line = at + 1;
        let cpus = header
            .split_whitespace()
            .map(|t| {
                let n = t
                    .strip_prefix("CPU")
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| (line, format!("header token '{t}' is not CPUn")))?;
                if n > MAX_CPU {
                    return Err((line, format!("header names CPU {n}, above {MAX_CPU}")));
                }
                Ok(n)
            })
            .collect::<Result<Vec<u32>, _>>()?;
        if cpus.is_empty() {
            return Err((line, "header names no CPU column ('CPU0 CPU1 ...')".into()));
        }
        let mut rows = Vec::new();
        for (i, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            rows.push(parse_row(line, cpus.len()).map_err(|m| (i + 1, m))?);
        }
        Ok(Table { cpus, rows })
    }

    /// The row of a numbered IRQ.
    pub fn irq(&self, irq: u32) -> Option<&Row> {
        let id = irq.to_string();
        self.rows.iter().find(|r| r.id == id)
    }
}

/// Split one row. `ncpu` is the number of count columns.
fn parse_row(line: &str, ncpu: usize) -> Result<Row, String> {
    let (id, rest) = line
        .split_once(':')
        .ok_or_else(|| format!("expected 'IRQ: counts ...', found '{}'", line.trim()))?;
    let id = id.trim().to_string();
    if id.is_empty() || id.contains(char::is_whitespace) {
        return Err(format!("'{}' is not an IRQ number or name", id));
    }
    // Up to ncpu counts; a named row such as ERR has one total.
    let mut counts = Vec::with_capacity(ncpu);
    let mut pos = 0;
    while counts.len() < ncpu {
        let start = pos + rest[pos..].len() - rest[pos..].trim_start().len();
        let end = rest[start..]
            .find(char::is_whitespace)
            .map_or(rest.len(), |e| start + e);
        let token = &rest[start..end];
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        counts.push(
            token
                .parse::<u64>()
                .map_err(|e| format!("count '{token}': {e}"))?,
        );
        pos = end;
    }
    if counts.is_empty() {
        return Err(format!("IRQ {id}: no counts after the colon"));
    }
    let tail = rest[pos..].trim();
    let mut row = Row {
        id,
        counts,
        chip: None,
        hwirq: None,
        flow: None,
        shown_trigger: None,
        actions: Vec::new(),
        description: None,
    };
    if !row.is_numbered() {
        row.description = (!tail.is_empty()).then(|| tail.to_string());
        return Ok(row);
    }
    if tail.is_empty() {
        return Ok(row); // a line with no chip and no action (seen on some arches)
    }
    split_chip(tail, &mut row);
    Ok(row)
}

/// Known flow names at the end of an old-style joined `chip-flow` token.
const FLOWS: &[&str] = &[
    "fasteoi", "edge", "level", "simple", "percpu", "XT-PIC", "XT", "bad", "none",
];

/// Fill chip, hwirq, flow and actions from the text after the counts. The chip name may hold
/// spaces (`Hyper-V PCIe MSI`, `RISC-V INTC`), so the domain-era columns are found by their
/// shape wherever they start, within the first few tokens.
fn split_chip(tail: &str, row: &mut Row) {
    let mut tokens = Tokens::new(tail);
    let mut seen: Vec<(usize, &str)> = Vec::new(); // (start offset, token)
    for _ in 0..5 {
        let before = tokens.pos;
        let Some(t) = tokens.next() else { break };
        let start = tokens.pos - t.len();
        debug_assert!(start >= before);
        seen.push((start, t));
    }
    if seen.is_empty() {
        return;
    }
    let chip_until = |i: usize| tail[..seen[i].0].trim().to_string();
    let end_of = |i: usize| seen[i].0 + seen[i].1.len();
    let is_num = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let trigger = |t: &str| match t {
        "Level" => Some(Trigger::Level),
        "Edge" => Some(Trigger::Edge),
        _ => None,
    };
    let mut actions_from = None;
    for i in 1..seen.len() {
        let t = seen[i].1;
        // `CHIP hwirq-flow` (`IO-APIC 2-edge`, `PCI-MSIX-0000:00:02.0 1-edge`)
        if is_hwirq_flow(t) {
            let (hw, flow) = t.split_once('-').expect("checked");
            row.chip = Some(chip_until(i));
            row.hwirq = Some(hw.to_string());
            row.flow = Some(flow.to_string());
            actions_from = Some(end_of(i));
            break;
        }
        // `CHIP -flow` (no domain: the hwirq column is blank)
        if t.starts_with('-') && t.len() > 1 {
            row.chip = Some(chip_until(i));
            row.flow = Some(t[1..].to_string());
            actions_from = Some(end_of(i));
            break;
        }
        // `CHIP hwirq Level|Edge [-flow]` (GENERIC_IRQ_SHOW_LEVEL: ARM, RISC-V)
        if is_num(t) && seen.get(i + 1).and_then(|n| trigger(n.1)).is_some() {
            row.chip = Some(chip_until(i));
            row.hwirq = Some(t.to_string());
            row.shown_trigger = trigger(seen[i + 1].1);
            actions_from = Some(end_of(i + 1));
            if let Some(f) = seen
                .get(i + 2)
                .filter(|f| f.1.starts_with('-') && f.1.len() > 1)
            {
                row.flow = Some(f.1[1..].to_string());
                actions_from = Some(end_of(i + 2));
            }
            break;
        }
    }
    if actions_from.is_none() {
        if seen.len() > 1 && is_num(seen[1].1) {
            // `CHIP hwirq` with no flow (`intel-gpio  139`)
            row.chip = Some(seen[0].1.to_string());
            row.hwirq = Some(seen[1].1.to_string());
            actions_from = Some(end_of(1));
        } else {
            // Old eras: one token, `XT-PIC`, `IO-APIC-edge`, `PCI-MSI-edge`, `XT-PIC-XT`.
            let (chip, flow) = split_joined(seen[0].1);
            row.chip = Some(chip.to_string());
            row.flow = flow.map(str::to_string);
            actions_from = Some(end_of(0));
        }
    }
    let actions = tail[actions_from.unwrap_or(tail.len())..].trim();
    if !actions.is_empty() {
        row.actions = actions.split(", ").map(|a| a.trim().to_string()).collect();
    }
}

/// `2-edge`, `512000-edge`, `0-fasteoi`.
fn is_hwirq_flow(t: &str) -> bool {
    t.split_once('-').is_some_and(|(hw, flow)| {
        !hw.is_empty() && hw.bytes().all(|b| b.is_ascii_digit()) && !flow.is_empty()
    })
}

/// Split an old-style `chip-flow` token at a known flow suffix; `XT-PIC` and `PCI-MSI` alone
/// are chips without a flow (2.6.17 and earlier).
fn split_joined(token: &str) -> (&str, Option<&str>) {
    for flow in FLOWS {
        if let Some(chip) = token.strip_suffix(flow).and_then(|c| c.strip_suffix('-')) {
            if !chip.is_empty() {
                return (chip, Some(flow));
            }
        }
    }
    (token, None)
}

/// Whitespace-separated tokens with the byte position after the last one taken.
#[derive(Clone)]
struct Tokens<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Tokens<'a> {
    fn new(text: &'a str) -> Self {
        Tokens { text, pos: 0 }
    }
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        let rest = &self.text[self.pos..];
        let start = self.pos + (rest.len() - rest.trim_start().len());
        if start >= self.text.len() {
            self.pos = self.text.len();
            return None;
        }
        let end = self.text[start..]
            .find(char::is_whitespace)
            .map_or(self.text.len(), |e| start + e);
        self.pos = end;
        Some(&self.text[start..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(line: &str, ncpu: usize) -> Row {
        parse_row(line, ncpu).expect("parses")
    }

    #[test]
    fn old_single_token_types() {
        let r = row("  0:    1234567          XT-PIC  timer", 1);
        assert_eq!(r.chip.as_deref(), Some("XT-PIC"));
        assert_eq!(r.flow, None);
        assert_eq!(r.delivery(), Delivery::XtPic);
        assert_eq!(r.actions, ["timer"]);

        let r = row(" 11:       4242    IO-APIC-level  uhci_hcd:usb1, eth0", 1);
        assert_eq!(
            (r.chip.as_deref(), r.flow.as_deref()),
            (Some("IO-APIC"), Some("level"))
        );
        assert_eq!(r.trigger(), Some(Trigger::Level));
        assert_eq!(r.actions, ["uhci_hcd:usb1", "eth0"]);
    }

    #[test]
    fn genirq_joined_chip_and_flow() {
        let r = row(
            " 16:    100    200   IO-APIC-fasteoi   ehci_hcd:usb1, uhci_hcd:usb3",
            2,
        );
        assert_eq!(r.counts, [100, 200]);
        assert_eq!(r.delivery(), Delivery::IoApic);
        assert_eq!(r.trigger(), Some(Trigger::Level));
        assert_eq!(r.actions.len(), 2);

        let r = row(" 0:    99   XT-PIC-XT        timer", 1);
        assert_eq!(
            (r.chip.as_deref(), r.flow.as_deref()),
            (Some("XT-PIC"), Some("XT"))
        );
        assert_eq!(r.delivery(), Delivery::XtPic);

        let r = row(" 45:   7 0  IR-PCI-MSI-edge      eth0-rx-0", 2);
        assert!(r.remapped());
        assert_eq!(r.delivery(), Delivery::Msi);
        assert_eq!(r.trigger(), Some(Trigger::Edge));
    }

    #[test]
    fn domain_era_hwirq_and_flow() {
        let r = row(
            " 122:  0  0  IR-PCI-MSI 512000-edge      ahci[0000:00:1f.2]",
            2,
        );
        assert_eq!(r.chip.as_deref(), Some("IR-PCI-MSI"));
        assert_eq!(r.hwirq.as_deref(), Some("512000"));
        assert_eq!(r.flow.as_deref(), Some("edge"));
        assert_eq!(r.actions, ["ahci[0000:00:1f.2]"]);

        let r = row(
            " 36:          0      54495 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0",
            2,
        );
        assert_eq!(r.delivery(), Delivery::MsiX);
        assert_eq!(r.hwirq.as_deref(), Some("1"));

        let r = row("  9:   0   4   IR-IO-APIC    9-fasteoi   acpi", 2);
        assert_eq!(r.delivery(), Delivery::IoApic);
        assert!(r.remapped());
        assert_eq!(r.trigger(), Some(Trigger::Level));
    }

    #[test]
    fn arm_gic_shows_the_level() {
        let r = row(" 11:  5001  4999     GICv3  27 Level     arch_timer", 2);
        assert_eq!(r.hwirq.as_deref(), Some("27"));
        assert_eq!(r.trigger(), Some(Trigger::Level));
        assert_eq!(r.actions, ["arch_timer"]);
        assert_eq!(r.delivery(), Delivery::Other);
    }

    #[test]
    fn chip_names_with_spaces_and_parent_domain_prefixes() {
        let r = row(
            " 24:  0  7  Hyper-V PCIe MSI 134250496-edge      mlx5_async0@pci:e44e:00:02.0",
            2,
        );
        assert_eq!(r.chip.as_deref(), Some("Hyper-V PCIe MSI"));
        assert_eq!(r.hwirq.as_deref(), Some("134250496"));
        assert_eq!(r.delivery(), Delivery::Msi);
        assert_eq!(r.actions, ["mlx5_async0@pci:e44e:00:02.0"]);

        let r = row(" 5:  10  20  RISC-V INTC   5 Edge      riscv-timer", 2);
        assert_eq!(r.chip.as_deref(), Some("RISC-V INTC"));
        assert_eq!(r.trigger(), Some(Trigger::Edge));
        assert_eq!(r.actions, ["riscv-timer"]);

        let r = row(
            " 60:  1  0  ITS-PCI-MSIX-0000:01:00.0   0 Edge      nvme0q0",
            2,
        );
        assert_eq!(r.delivery(), Delivery::MsiX);
        assert_eq!(r.actions, ["nvme0q0"]);
    }

    #[test]
    fn named_rows() {
        let r = row("LOC:    1417661    1419321   Local timer interrupts", 2);
        assert_eq!(r.delivery(), Delivery::PerCpu);
        assert_eq!(r.description.as_deref(), Some("Local timer interrupts"));
        let r = row("ERR:          0", 2);
        assert_eq!(r.counts, [0]);
        assert_eq!(r.description, None);
    }

    #[test]
    fn a_line_without_an_action() {
        let r = row("  2:          0          0    XT-PIC-XT        cascade", 2);
        assert_eq!(r.actions, ["cascade"]);
        let r = row(" 24:          1          0  IO-APIC   5-edge", 2);
        assert!(r.actions.is_empty());
    }

    #[test]
    fn errors_name_the_line() {
        let e = Table::parse("CPU0\n 0: 12 XT-PIC timer\nbogus line\n").unwrap_err();
        assert_eq!(e.0, 3);
        assert!(e.1.contains("expected 'IRQ: counts"), "{}", e.1);
        let e = Table::parse("cpu zero\n").unwrap_err();
        assert_eq!(e.0, 1);
    }

    /// A header after blank lines is on the line the file has it on, not line 1.
    #[test]
    fn header_errors_name_the_header_line() {
        let e = Table::parse("\n   \n           CPU0 CPUX\n 0: 1 XT-PIC timer\n").unwrap_err();
        assert_eq!(e.0, 3, "{}", e.1);
        assert!(e.1.contains("'CPUX' is not CPUn"), "{}", e.1);
        let e = Table::parse("\r\n\n\nCPU0 1\n").unwrap_err();
        assert_eq!(e.0, 4, "{}", e.1);
        // A CPU number no kernel has (the fuzzer's `CPU4294967295`, which overflowed the
        // inventory's CPU list once).
        let e = Table::parse("\nCPU0 CPU4294967295\n 0: 1 1 XT-PIC timer\n").unwrap_err();
        assert_eq!(e.0, 2, "{}", e.1);
        assert!(e.1.contains("CPU 4294967295, above 65535"), "{}", e.1);
        // Only blank lines: the line after the last one, where the header should have been.
        let e = Table::parse("\n\n").unwrap_err();
        assert_eq!(e.0, 3, "{}", e.1);
        assert!(e.1.contains("no header line"), "{}", e.1);
    }
}
