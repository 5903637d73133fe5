//! Ctrl-C and SIGTERM become a stop flag, so a measurement ends through its normal path and
//! every guard restores what it changed (tracefs, `cpu_dma_latency`, memory locking). The
//! default action, dying on the spot, would leave the host changed.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A flag that SIGINT and SIGTERM set. Registering twice is harmless.
pub fn stop_flag() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}
