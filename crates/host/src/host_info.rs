//! What machine this is, for the record a measurement carries (the JSON envelope's `host`):
//! kernel, architecture, CPU model, online CPUs and whether it runs virtualized. Read from
//! `/proc` and `/sys` under a root directory, so tests run on captured trees.

use crate::pci::read_trimmed;
use irqlab_stats::results::HostInfo;
use std::path::Path;

/// The host under `root` (`/` for the live system). Anything unreadable is `None`.
pub fn collect(root: &Path) -> HostInfo {
    let cpuinfo = std::fs::read_to_string(root.join("proc/cpuinfo")).unwrap_or_default();
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    // x86 lists `hypervisor` among the flags under any hypervisor (CPUID.1:ECX bit 31); other
    // architectures' cpuinfo has no such line, and then nothing is claimed.
    let virtualized = field("flags").map(|f| f.split_whitespace().any(|w| w == "hypervisor"));
    let hypervisor = ["sys/hypervisor/type", "sys/class/dmi/id/sys_vendor"]
        .iter()
        .find_map(|p| read_trimmed(&root.join(p)))
        .filter(|v| !v.is_empty());
    HostInfo {
        kernel_release: read_trimmed(&root.join("proc/sys/kernel/osrelease")),
        kernel_version: read_trimmed(&root.join("proc/sys/kernel/version")),
        machine: (root == Path::new("/"))
            .then(|| {
                nix::sys::utsname::uname()
                    .ok()
                    .map(|u| u.machine().to_string_lossy().into_owned())
            })
            .flatten(),
        cpu_model: field("model name").or_else(|| field("Model")),
        cpus_online: read_trimmed(&root.join("sys/devices/system/cpu/online"))
            .and_then(|t| crate::timer::parse_cpu_list(&t).ok())
            .unwrap_or_default(),
        virtualized,
        hypervisor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_captured_tree() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for (p, v) in [
            ("proc/sys/kernel/osrelease", "6.1.0-rt\n"),
            ("proc/sys/kernel/version", "#1 SMP PREEMPT_RT Debian\n"),
            (
                "proc/cpuinfo",
                "processor\t: 0\nmodel name\t: Intel(R) Atom(TM)\nflags\t\t: fpu hypervisor\n",
            ),
            ("sys/devices/system/cpu/online", "0-3\n"),
            ("sys/class/dmi/id/sys_vendor", "QEMU\n"),
        ] {
            std::fs::create_dir_all(r.join(p).parent().unwrap()).unwrap();
            std::fs::write(r.join(p), v).unwrap();
        }
        let h = collect(r);
        assert_eq!(h.kernel_release.as_deref(), Some("6.1.0-rt"));
        assert!(h.kernel_version.unwrap().contains("PREEMPT_RT"));
        assert_eq!(h.cpu_model.as_deref(), Some("Intel(R) Atom(TM)"));
        assert_eq!(h.cpus_online, [0, 1, 2, 3]);
        assert_eq!(h.virtualized, Some(true));
        assert_eq!(h.hypervisor.as_deref(), Some("QEMU"));
        // A captured tree is not this machine: no uname.
        assert_eq!(h.machine, None);
        // No flags line (not x86): nothing claimed either way.
        std::fs::write(r.join("proc/cpuinfo"), "processor\t: 0\n").unwrap();
        assert_eq!(collect(r).virtualized, None);
    }
}
