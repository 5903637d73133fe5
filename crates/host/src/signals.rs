//! Ctrl-C, SIGTERM, SIGHUP and SIGQUIT become a stop flag, so a measurement ends through its normal path and
//! every guard restores what it changed (tracefs, `cpu_dma_latency`, memory locking). The
//! default action, dying on the spot, would leave the host changed.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A flag that SIGINT, SIGTERM, SIGHUP (a closed terminal or ssh session) and SIGQUIT set.
/// Registering twice is harmless.
pub fn stop_flag() -> std::io::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}
