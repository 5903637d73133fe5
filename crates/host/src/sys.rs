//! The system calls the timer measurement makes, as thin wrappers: clocks, sleeping, CPU
//! affinity, scheduling policy, memory locking. Times are `CLOCK_MONOTONIC` nanoseconds as `u64`
//! (584 years from boot before they wrap).
//!
//! This is the only module of the crate with `unsafe`: the calls nix 0.29 does not wrap
//! (`pthread_setschedparam`, `getrlimit`, `mallopt`), and taking ownership of the descriptor nix's
//! `openat2` returns as a raw number ([`owned_file`]), each in one block with its SAFETY
//! argument.

#![allow(unsafe_code)]

use nix::errno::Errno;
use nix::sched::CpuSet;
use nix::sys::mman::MlockAllFlags;
use nix::sys::time::TimeSpec;
use nix::time::{ClockId, ClockNanosleepFlags};
use nix::unistd::Pid;
use std::time::Duration;

const NS_PER_S: u64 = 1_000_000_000;

/// Now on `CLOCK_MONOTONIC`, in ns.
pub(crate) fn monotonic_now_ns() -> Result<u64, Errno> {
    Ok(timespec_ns(&nix::time::clock_gettime(
        ClockId::CLOCK_MONOTONIC,
    )?))
}

/// Resolution of `CLOCK_MONOTONIC` in ns: 1 with high-resolution timers, a tick without.
pub(crate) fn monotonic_resolution_ns() -> Result<u64, Errno> {
    Ok(timespec_ns(&nix::time::clock_getres(
        ClockId::CLOCK_MONOTONIC,
    )?))
}

/// Sleeps until `CLOCK_MONOTONIC` reaches `deadline_ns`: `clock_nanosleep(TIMER_ABSTIME)`, as
/// cyclictest does by default. Returns at once if the deadline has passed. `Err(EINTR)` when a
/// signal handler ran; the caller may call again with the same deadline (an absolute sleep needs
/// no remaining-time bookkeeping).
pub(crate) fn sleep_until_ns(deadline_ns: u64) -> Result<(), Errno> {
    let deadline = TimeSpec::from_duration(Duration::from_nanos(deadline_ns));
    nix::time::clock_nanosleep(
        ClockId::CLOCK_MONOTONIC,
        ClockNanosleepFlags::TIMER_ABSTIME,
        &deadline,
    )
    .map(drop)
}

/// Pins the calling thread (not the process) to `cpu`.
pub(crate) fn pin_current_thread(cpu: u32) -> Result<(), Errno> {
    let mut set = CpuSet::new();
    set.set(cpu as usize)?;
    // Pid 0 is the calling thread: the kernel's affinity is per task.
    nix::sched::sched_setaffinity(Pid::from_raw(0), &set)
}

/// The calling thread's kernel task id (what `ps -L`, tracefs and cyclictest's `T: 0 (1234)`
/// show).
pub(crate) fn current_tid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// Puts the calling thread (only) under `SCHED_FIFO` at `priority` (1..=99).
/// `Err(EPERM)` without root or `CAP_SYS_NICE` and beyond `RLIMIT_RTPRIO`.
#[cfg(test)]
pub(crate) fn set_current_thread_fifo(priority: i32) -> Result<(), Errno> {
    set_current_thread_policy(libc::SCHED_FIFO, priority)
}

/// Puts the calling thread (only) under `policy` (`SCHED_FIFO`, `SCHED_RR` at 1..=99, or
/// `SCHED_OTHER` at 0). `Err(EPERM)` for a real-time policy without root or `CAP_SYS_NICE`
/// and beyond `RLIMIT_RTPRIO`.
pub(crate) fn set_current_thread_policy(policy: libc::c_int, priority: i32) -> Result<(), Errno> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // pthread_setschedparam rather than sched_setscheduler(0, ..): it is per thread by
    // definition, also on C libraries (musl) where sched_setscheduler is process-wide or absent.
    // SAFETY: pthread_self() is the calling thread's valid handle, and `param` is an initialised
    // sched_param that lives across the call, which only reads it.
    let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &param) };
    // The pthread functions return the error number instead of setting errno.
    match rc {
        0 => Ok(()),
        e => Err(Errno::from_raw(e)),
    }
}

/// glibc's malloc keeps the memory the process frees for its next allocations, instead of
/// handing blocks of 128 KiB and more back to the kernel (`munmap`, or trimming the heap's top)
/// as it does by default. The simulator builds and drops a machine with its HDR histograms
/// (~200 KiB each) per replication and per run; with the defaults each one's pages were mapped
/// and faulted in afresh, ~1.7 MB a replication: seed 002's 20 uncertainty draws took 600,000
/// page faults and 1.3 s of system time, and the threads of one process serialise on the
/// faults and on the unmaps' TLB shootdowns where independent processes do not (the scaling
/// of issue 41). `mallopt(3)`: `M_MMAP_THRESHOLD` at its largest on 64-bit targets, 32 MiB
/// (allocations under it come from the arenas), and `M_TRIM_THRESHOLD` 256 MiB (free memory at
/// a heap's top before it is given back). Elsewhere (other C libraries, 32-bit): nothing.
pub fn retain_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64"))]
    {
        // mallopt(3): "DEFAULT_MMAP_THRESHOLD_MAX: ... 4*1024*1024*sizeof(long) on 64-bit".
        const MMAP_THRESHOLD_BYTES: libc::c_int = 32 << 20;
        const TRIM_THRESHOLD_BYTES: libc::c_int = 256 << 20;
        // SAFETY: mallopt only sets the allocator's parameters, and is called before any thread
        // starts. A value it rejects leaves the default and returns 0, which is no error here.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES);
        }
    }
}

/// The process's `RLIMIT_MEMLOCK` soft limit in bytes, `None` when unlimited.
pub(crate) fn memlock_limit_bytes() -> Result<Option<u64>, Errno> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid, writable rlimit that outlives the call, which only writes it.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) };
    Errno::result(rc)?;
    Ok((limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur))
}

/// `mlockall(MCL_CURRENT | MCL_FUTURE)`: every page mapped now and later stays in RAM.
pub(crate) fn lock_all_memory() -> Result<(), Errno> {
    nix::sys::mman::mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
}

/// `munlockall()`: undoes [`lock_all_memory`], and also any lock the process took before.
pub(crate) fn unlock_all_memory() -> Result<(), Errno> {
    nix::sys::mman::munlockall()
}

fn timespec_ns(t: &TimeSpec) -> u64 {
    // CLOCK_MONOTONIC is never negative.
    (t.tv_sec() as u64) * NS_PER_S + t.tv_nsec() as u64
}

/// The descriptor `openat2(2)` returned (nix 0.29 gives it as a raw number), as an owned file.
pub(crate) fn owned_file(fd: std::os::fd::RawFd) -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: `fd` is a new descriptor that openat2 just returned to the caller, open, and
    // owned by nothing else; the File takes it over and closes it once.
    unsafe { std::fs::File::from_raw_fd(fd) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_advances_and_sleep_reaches_the_deadline() {
        let start = monotonic_now_ns().unwrap();
        sleep_until_ns(start + 200_000).unwrap();
        assert!(monotonic_now_ns().unwrap() >= start + 200_000);
        // A deadline in the past returns at once.
        sleep_until_ns(start).unwrap();
        assert!(monotonic_resolution_ns().unwrap() >= 1);
    }

    #[test]
    fn thread_calls_work_or_fail_with_a_reason() {
        assert!(current_tid() > 0);
        // A CPU this process may run on (CPU 0 can be outside a CI runner's cpuset).
        let allowed = nix::sched::sched_getaffinity(Pid::from_raw(0)).unwrap();
        let cpu = (0..CpuSet::count())
            .find(|&c| allowed.is_set(c).unwrap())
            .unwrap();
        // In a thread of our own, so the test harness's threads keep their settings.
        std::thread::spawn(move || {
            pin_current_thread(cpu as u32).unwrap();
            assert_eq!(nix::sched::sched_getcpu().unwrap(), cpu);
            // Root gets SCHED_FIFO; others get EPERM, which the measurement turns into a warning.
            match set_current_thread_fifo(1) {
                Ok(()) | Err(Errno::EPERM) => {}
                Err(e) => panic!("unexpected error {e}"),
            }
            assert_eq!(set_current_thread_fifo(100), Err(Errno::EINVAL));
            // SCHED_OTHER at 0 needs no privilege; a priority with it is invalid.
            assert_eq!(set_current_thread_policy(libc::SCHED_OTHER, 0), Ok(()));
            assert_eq!(
                set_current_thread_policy(libc::SCHED_OTHER, 5),
                Err(Errno::EINVAL)
            );
        })
        .join()
        .unwrap();
        assert_eq!(pin_current_thread(1 << 20), Err(Errno::EINVAL));
        memlock_limit_bytes().unwrap();
    }
}
