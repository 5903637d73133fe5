//! PCI functions as sysfs shows them (`/sys/bus/pci/devices/DDDD:BB:DD.F`): the legacy IRQ, the
//! MSI / MSI-X vectors in use (`msi_irqs/N`, each file saying `msi` or `msix`), the driver, and
//! the interrupt capabilities read from configuration space.
//!
//! Configuration space (PCI Local Bus 3.0, 6.1 and 6.7): Status bit 4 (offset 0x06) says a
//! capability list exists; its head is at 0x34; each entry is `id, next`. MSI is capability 0x05,
//! MSI-X 0x11 with its table size minus one in Message Control bits 10:0. Interrupt Pin (0x3D) is
//! 1-4 for INTA-INTD. Without root, sysfs returns only the first 64 bytes, so the capability
//! list may be out of reach; then the capabilities are unknown, not absent.

use crate::error::HostError;
use irqlab_stats::inventory::PciFunction;
use std::path::Path;

/// What MSI and MSI-X capabilities configuration space shows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// The capability list could be read (false without root: sysfs gives 64 bytes).
    pub readable: bool,
    pub msi: bool,
    pub msix_table_size: Option<u16>,
    /// `INTA`..`INTD`.
    pub intx_pin: Option<char>,
}

/// Parse configuration space bytes.
pub fn capabilities(config: &[u8]) -> Capabilities {
    let mut caps = Capabilities {
        intx_pin: config
            .get(0x3D)
            .and_then(|&p| (1..=4).contains(&p).then(|| (b'A' + p - 1) as char)),
        ..Capabilities::default()
    };
    let Some(&status) = config.get(0x06) else {
        return caps;
    };
    if status & 0x10 == 0 {
        caps.readable = config.len() >= 0x40;
        return caps;
    }
    if config.len() < 0x100 {
        return caps; // the list lives beyond the 64 bytes we may read
    }
    caps.readable = true;
    let mut at = usize::from(config[0x34] & 0xFC);
    // A list longer than the space it lives in is corrupt; stop rather than loop.
    for _ in 0..48 {
        if at < 0x40 || at + 4 > config.len() {
            break;
        }
        match config[at] {
            0x05 => caps.msi = true,
            0x11 => {
                let control = u16::from_le_bytes([config[at + 2], config[at + 3]]);
                caps.msix_table_size = Some((control & 0x7FF) + 1);
            }
            _ => {}
        }
        at = usize::from(config[at + 1] & 0xFC);
        if at == 0 {
            break;
        }
    }
    caps
}

/// One PCI function's interrupt facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    pub address: String,
    pub driver: Option<String>,
    /// `irq`: the legacy line (or, on some kernels, the first MSI vector while MSI is on).
    pub irq: Option<u32>,
    /// IRQs in `msi_irqs/`, each with true for MSI-X.
    pub msi_irqs: Vec<(u32, bool)>,
    pub caps: Capabilities,
}

impl Function {
    /// The data-model view.
    pub fn summary(&self) -> PciFunction {
        PciFunction {
            address: self.address.clone(),
            driver: self.driver.clone(),
            msi_capable: self.caps.msi,
            msix_table_size: self.caps.msix_table_size,
            intx_pin: self.caps.intx_pin.map(|p| format!("INT{p}")),
        }
    }
}

/// Every function under `root/sys/bus/pci/devices`. A machine without PCI has none.
pub fn functions(root: &Path) -> Result<Vec<Function>, HostError> {
    let dir = root.join("sys/bus/pci/devices");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(HostError::io(&dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| HostError::io(&dir, e))?;
        let path = entry.path();
        let address = entry.file_name().to_string_lossy().into_owned();
        let driver = std::fs::read_link(path.join("driver"))
            .ok()
            .and_then(|l| l.file_name().map(|n| n.to_string_lossy().into_owned()));
        let irq = read_trimmed(&path.join("irq"))
            .and_then(|s| s.parse::<u32>().ok())
            .filter(|&n| n != 0);
        let mut msi_irqs = Vec::new();
        if let Ok(dir) = std::fs::read_dir(path.join("msi_irqs")) {
            for e in dir.flatten() {
                if let Ok(n) = e.file_name().to_string_lossy().parse::<u32>() {
                    // 3.x-4.x kernels made each entry a directory with a `mode` file.
                    let p = e.path();
                    let kind = if p.is_dir() {
                        read_trimmed(&p.join("mode"))
                    } else {
                        read_trimmed(&p)
                    }
                    .unwrap_or_default();
                    msi_irqs.push((n, kind == "msix"));
                }
            }
        }
        msi_irqs.sort_unstable();
        let caps = std::fs::read(path.join("config"))
            .map(|c| capabilities(&c))
            .unwrap_or_default();
        out.push(Function {
            address,
            driver,
            irq,
            msi_irqs,
            caps,
        });
    }
    out.sort_by(|a, b| a.address.cmp(&b.address));
    Ok(out)
}

/// A small sysfs/procfs file's content, trimmed; None if it cannot be read.
pub(crate) fn read_trimmed(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Without waiting: a FIFO in a tree given with --root (whoever wrote it could have put one
    // where a sysfs or procfs file belongs) would block the open and the read for ever. Regular
    // files, sysfs and procfs ignore O_NONBLOCK; a FIFO then reads as empty.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    Some(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This VM's virtio-blk function (0000:00:02.0), configuration space as read by root.
    fn virtio_config() -> Vec<u8> {
        let mut c = vec![0u8; 256];
        let head: [u8; 0x80] = [
            0xf4, 0x1a, 0x42, 0x10, 0x06, 0x04, 0x10, 0x00, 0x01, 0x00, 0x80, 0x01, 0, 0, 0, 0,
            0x04, 0x00, 0x08, 0x00, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, //
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf4, 0x1a, 0x42, 0x10, //
            0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, //
            0x09, 0x50, 0x10, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x38, 0, 0, 0, //
            0x09, 0x60, 0x10, 0x03, 0, 0, 0, 0, 0, 0x20, 0, 0, 0x01, 0, 0, 0, //
            0x09, 0x70, 0x10, 0x04, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0x10, 0, 0, //
            0x09, 0x84, 0x14, 0x02, 0, 0, 0, 0, 0, 0x60, 0, 0, 0, 0x10, 0, 0,
        ];
        c[..0x80].copy_from_slice(&head);
        // 0x84: MSI-X, next 0, message control 0x8001 (enabled, 2 vectors).
        c[0x84..0x88].copy_from_slice(&[0x11, 0x00, 0x01, 0x80]);
        c
    }

    #[test]
    fn walks_vendor_capabilities_to_msix() {
        let caps = capabilities(&virtio_config());
        assert!(caps.readable);
        assert!(!caps.msi);
        assert_eq!(caps.msix_table_size, Some(2));
        assert_eq!(caps.intx_pin, None);
    }

    #[test]
    fn without_root_the_list_is_unknown() {
        let c = virtio_config();
        let caps = capabilities(&c[..64]);
        assert!(!caps.readable);
        assert_eq!(caps.msix_table_size, None);
    }

    #[test]
    fn msi_and_pin() {
        let mut c = vec![0u8; 256];
        c[0x06] = 0x10;
        c[0x34] = 0x50;
        c[0x3D] = 1;
        c[0x50..0x54].copy_from_slice(&[0x01, 0x60, 0, 0]); // power management
        c[0x60..0x64].copy_from_slice(&[0x05, 0x00, 0x80, 0]); // MSI, 64-bit
        let caps = capabilities(&c);
        assert!(caps.msi);
        assert_eq!(caps.intx_pin, Some('A'));
    }

    #[test]
    fn a_looping_list_ends() {
        let mut c = vec![0u8; 256];
        c[0x06] = 0x10;
        c[0x34] = 0x40;
        c[0x40..0x42].copy_from_slice(&[0x09, 0x40]); // points at itself
        let caps = capabilities(&c);
        assert!(caps.readable && !caps.msi);
    }
}
