//! Shared lists of CPUs, for what sysfs says many CPUs share (a core's threads, a cache).
//!
//! Every CPU of a socket names the same last-level cache in `cache/indexN/shared_cpu_list`:
//! held as a list per CPU, a host of 65,536 CPUs in 8 sockets keeps 65,536 copies of an
//! 8,192-CPU list (2 GiB), and comparing them costs as much (issue 37: the plan of such a host
//! did not finish in 120 s). [`CpuLists`] parses each distinct text once and hands out one
//! shared allocation for it, so a host's lists take memory in proportion to its distinct
//! lists, and two lists from one allocation compare equal at once.

use serde::{Serialize, Serializer};
use std::collections::HashMap;
use std::sync::Arc;

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
    /// The list `text` names ([`crate::timer::parse_cpu_list`]), or why it is not one; the
    /// same allocation for the same text (surrounding white space aside).
    pub fn parse(&mut self, text: &str) -> Result<CpuList, String> {
        let text = text.trim();
        if let Some(l) = self.seen.get(text) {
            return Ok(l.clone());
        }
        let list = CpuList(crate::timer::parse_cpu_list(text)?.into());
        self.seen.insert(text.to_string(), list.clone());
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_text_is_one_allocation_and_lists_are_sorted_sets() {
        let mut lists = CpuLists::default();
        let a = lists.parse("0-3,8\n").unwrap();
        let b = lists.parse("0-3,8").unwrap();
        assert!(a.shares(&b));
        assert_eq!(a, [0, 1, 2, 3, 8]);
        let c = CpuList::new([8, 3, 2, 1, 0, 3]);
        assert!(!a.shares(&c));
        assert_eq!(a, c);
        assert!(c.contains(8) && !c.contains(4));
        assert_eq!(serde_json::to_string(&c).unwrap(), "[0,1,2,3,8]");
        assert!(lists.parse("3-1").is_err());
        assert!(CpuList::new([1]) < CpuList::new([1, 2]));
    }
}
