//! Linux's CPU list and mask formats, and shared lists of CPUs.
//!
//! `0-3,6` (`/sys/devices/system/cpu/online`, `shared_cpu_list`) and `ff,00000000`
//! (`/proc/irq/N/smp_affinity`) are read and written by the host crate (its readers, its
//! planner, `--apply`), by the model's planner in `irqlab-sim` (the masks it tells the user to
//! write), and by the renderers in `irqlab-report` (the host's CPUs, the masks). Those crates
//! depend only on this one, so the one definition of each format is here, next to the result
//! model they all read, rather than in one of them and copied in the others.
//!
//! Every CPU of a socket names the same last-level cache in `cache/indexN/shared_cpu_list`:
//! held as a list per CPU, a host of 65,536 CPUs in 8 sockets keeps 65,536 copies of an
//! 8,192-CPU list (2 GiB), and comparing them costs as much (issue 37: the plan of such a host
//! did not finish in 120 s). [`CpuLists`] parses each distinct text once and hands out one
//! shared allocation for it, so a host's lists take memory in proportion to its distinct
//! lists, and two lists from one allocation compare equal at once.

#![allow(missing_docs)] // the items are documented; accessors' names say what they return

use serde::{Serialize, Serializer};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

/// Largest CPU number irqlab's readers accept ([`parse_cpu_list`], `/proc/interrupts`' header):
/// the kernel's `NR_CPUS` is at most 8192.
pub const MAX_CPU: u32 = 65_535;

/// Parses the kernel's CPU list format (`0-3,6`, as in `/sys/devices/system/cpu/online` and
/// `Cpus_allowed_list`) into ascending CPU numbers without duplicates. Surrounding whitespace
/// is ignored; a blank list (the kernel prints an empty mask so) is empty.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let number = |s: &str| -> Result<u32, String> {
        let s = s.trim();
        let n: u32 = s
            .parse()
            .map_err(|_| format!("`{s}` in CPU list `{text}` is not a CPU number"))?;
        if n > MAX_CPU {
            return Err(format!("CPU {n} in `{text}` is above {MAX_CPU}"));
        }
        Ok(n)
    };
    let mut cpus = Vec::new();
    for item in text.split(',') {
        let (first, last) = match item.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(item)?;
                (n, n)
            }
        };
        if first > last {
            return Err(format!(
                "range `{}` in CPU list `{text}` runs backwards; write it low-high",
                item.trim()
            ));
        }
        cpus.extend(first..=last);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The inverse of [`parse_cpu_list`]: `[0, 1, 2, 3, 6]` gives `0-3,6`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        // `checked_add`: a list is any `u32`s, the last of which has no successor.
        while j + 1 < sorted.len() && sorted[j].checked_add(1) == Some(sorted[j + 1]) {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        match j - i {
            0 => write!(out, "{}", sorted[i]),
            _ => write!(out, "{}-{}", sorted[i], sorted[j]),
        }
        .expect("writing to a String cannot fail");
        i = j + 1;
    }
    out
}

/// The CPUs of a mask as `smp_affinity` prints and takes it: hexadecimal in 32-bit groups, most
/// significant first, separated by commas (`bitmap_print_to_pagebuf`, `cpumask_parse_user`):
/// `3`, `00000000,00000100`.
pub fn parse_mask(text: &str) -> Result<Vec<u32>, String> {
    let words = mask_words(text)?;
    let mut cpus = Vec::new();
    for (group, bits) in words.iter().enumerate() {
        for bit in 0..32 {
            if bits & (1 << bit) != 0 {
                cpus.push(group as u32 * 32 + bit);
            }
        }
    }
    Ok(cpus)
}

/// A mask's 32-bit groups, least significant first, without the zero groups above the highest
/// CPU: two masks name the same CPUs exactly when these are equal (as [`parse_mask`]'s lists
/// are, and with its errors), compared a group at a time rather than a CPU at a time.
pub fn mask_words(text: &str) -> Result<Vec<u32>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("an empty mask".into());
    }
    let mut words = Vec::new();
    for hex in text.rsplit(',') {
        if hex.is_empty() || hex.len() > 8 {
            return Err(format!(
                "'{text}': groups of 1 to 8 hexadecimal digits expected"
            ));
        }
        words.push(
            u32::from_str_radix(hex, 16)
                .map_err(|_| format!("'{text}': '{hex}' is not hexadecimal"))?,
        );
    }
    while words.last() == Some(&0) {
        words.pop();
    }
    Ok(words)
}

/// The mask `/proc/irq/N/smp_affinity` takes for one CPU: hexadecimal in 32-bit groups, most
/// significant first, separated by commas (Linux `bitmap_print_to_pagebuf`, as it prints them).
pub fn cpumask(cpu: usize) -> String {
    let group = cpu / 32;
    let mut out = format!("{:x}", 1u32 << (cpu % 32));
    for _ in 0..group {
        out.push_str(",00000000");
    }
    out
}

/// CPU numbers in ascending order, each once; cheap to clone (one shared allocation).
#[derive(Clone, Debug, Default)]
pub struct CpuList(Arc<[u32]>);

impl CpuList {
    /// The CPUs given, sorted, without repeats.
    pub fn new(cpus: impl IntoIterator<Item = u32>) -> CpuList {
        let mut v: Vec<u32> = cpus.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        CpuList(v.into())
    }

    /// Whether `cpu` is in the list (a binary search: the list is sorted).
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.0
    }

    /// Whether both are the one allocation (then they are equal without comparing).
    pub fn shares(&self, other: &CpuList) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The allocation's address: lists with one address are one list (for indexes that must not
    /// compare every CPU's copy; a list's address is stable while it lives).
    pub fn address(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

impl std::ops::Deref for CpuList {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.0
    }
}

impl From<Vec<u32>> for CpuList {
    fn from(v: Vec<u32>) -> CpuList {
        CpuList::new(v)
    }
}

impl FromIterator<u32> for CpuList {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> CpuList {
        CpuList::new(iter)
    }
}

impl PartialEq for CpuList {
    fn eq(&self, other: &CpuList) -> bool {
        self.shares(other) || self.0 == other.0
    }
}

impl Eq for CpuList {}

impl PartialOrd for CpuList {
    fn partial_cmp(&self, other: &CpuList) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CpuList {
    fn cmp(&self, other: &CpuList) -> std::cmp::Ordering {
        if self.shares(other) {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(&other.0)
        }
    }
}

impl std::hash::Hash for CpuList {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialEq<[u32]> for CpuList {
    fn eq(&self, other: &[u32]) -> bool {
        *self.0 == *other
    }
}

impl<const N: usize> PartialEq<[u32; N]> for CpuList {
    fn eq(&self, other: &[u32; N]) -> bool {
        *self.0 == other[..]
    }
}

impl PartialEq<Vec<u32>> for CpuList {
    fn eq(&self, other: &Vec<u32>) -> bool {
        *self.0 == other[..]
    }
}

/// As a JSON array of numbers, as a `Vec<u32>` is.
impl Serialize for CpuList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// Parses CPU lists (`0-3,8`), each distinct text once, and shares the result.
#[derive(Default)]
pub struct CpuLists {
    seen: HashMap<String, CpuList>,
}

impl CpuLists {
    /// The list `text` names ([`parse_cpu_list`]), or why it is not one; the
    /// same allocation for the same text (surrounding white space aside).
    pub fn parse(&mut self, text: &str) -> Result<CpuList, String> {
        let text = text.trim();
        if let Some(l) = self.seen.get(text) {
            return Ok(l.clone());
        }
        let list = CpuList(parse_cpu_list(text)?.into());
        self.seen.insert(text.to_string(), list.clone());
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_compress_runs() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_cpu_list(&[1]), "1");
        assert_eq!(format_cpu_list(&[3, 0, 2, 2]), "0,2-3");
        // The largest `u32` has no successor (the fuzzer's `CPU4294967295` overflowed here).
        assert_eq!(
            format_cpu_list(&[u32::MAX - 1, u32::MAX]),
            "4294967294-4294967295"
        );
        assert_eq!(format_cpu_list(&[u32::MAX]), "4294967295");
    }
}
