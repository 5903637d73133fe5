//! Ctrl-C, SIGTERM, SIGHUP and SIGQUIT become a stop flag, so a measurement ends through its
//! normal path and every guard restores what it changed (tracefs, `cpu_dma_latency`, memory
//! locking). The default action, dying on the spot, would leave the host changed. Which signal
//! stopped the run is kept, so the result can name it ([`received`]).

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The last stop signal received (its number; 0 for none). signal_hook stores into it from the
/// handler, which is async-signal-safe for an atomic.
fn last_signal() -> &'static Arc<AtomicUsize> {
    static LAST: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    LAST.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// A flag that SIGINT, SIGTERM, SIGHUP (a closed terminal or ssh session) and SIGQUIT set.
/// Registering twice is harmless.
pub fn stop_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
        signal_hook::flag::register_usize(sig, Arc::clone(last_signal()), sig as usize)?;
    }
    Ok(flag)
}

/// The stop signal received, as people name it: `SIGINT (Ctrl-C)`, `SIGTERM`, `SIGHUP`,
/// `SIGQUIT`; `None` if none was.
pub fn received() -> Option<&'static str> {
    name(last_signal().load(Ordering::Relaxed) as i32)
}

fn name(sig: i32) -> Option<&'static str> {
    match sig {
        SIGINT => Some("SIGINT (Ctrl-C)"),
        SIGTERM => Some("SIGTERM"),
        SIGHUP => Some("SIGHUP"),
        SIGQUIT => Some("SIGQUIT"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named_as_people_know_them() {
        assert_eq!(name(SIGTERM), Some("SIGTERM"));
        assert_eq!(name(SIGINT), Some("SIGINT (Ctrl-C)"));
        assert_eq!(name(0), None);
    }
}
