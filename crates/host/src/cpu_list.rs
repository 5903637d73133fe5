//! Shared lists of CPUs, for what sysfs says many CPUs share (a core's threads, a cache).
//!
//! Every CPU of a socket names the same last-level cache in `cache/indexN/shared_cpu_list`:
//! held as a list per CPU, a host of 65,536 CPUs in 8 sockets keeps 65,536 copies of an
//! 8,192-CPU list (2 GiB), and comparing them costs as much (issue 37: the plan of such a host
//! did not finish in 120 s). [`CpuLists`] parses each distinct text once and hands out one
//! shared allocation for it, so a host's lists take memory in proportion to its distinct
//! lists, and two lists from one allocation compare equal at once.

// The type lives with the shared result model, which the renderers read (`irqlab_stats::cpus`);
// this path stays for the host crate's readers.
pub use irqlab_stats::cpus::{CpuList, CpuLists};

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
