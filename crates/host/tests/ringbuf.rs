//! The ring-buffer page parser on pages captured from this project's 6.18 x86_64 kernel
//! (`tests/fixtures/tracefs/6.18-x86_64`: `dd` of one page of `per_cpu/cpuN/trace_pipe_raw`
//! from an instance with the `irq` events and `local_timer_entry/exit` enabled, and the events'
//! `format` files).

use irqlab_host::ringbuf::{parse_page, record_type, Format};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tracefs/6.18-x86_64")
}

fn formats() -> HashMap<u16, Format> {
    let mut out = HashMap::new();
    for sys in ["irq", "irq_vectors"] {
        for e in std::fs::read_dir(dir().join("events").join(sys)).unwrap() {
            let f = Format::read(&e.unwrap().path().join("format")).unwrap();
            out.insert(f.id, f);
        }
    }
    out
}

#[test]
fn captured_pages_hold_known_events_in_time_order() {
    let formats = formats();
    assert_eq!(formats.len(), 9);
    let mut total = 0;
    let mut names = std::collections::BTreeSet::new();
    for cpu in 0..2 {
        let page = std::fs::read(dir().join(format!("cpu{cpu}.page"))).unwrap();
        let mut last = 0u64;
        let info = parse_page(&page, |ts, rec| {
            assert!(ts >= last, "time went backwards: {ts} after {last}");
            last = ts;
            let f = formats
                .get(&record_type(rec))
                .unwrap_or_else(|| panic!("unknown event id {}", record_type(rec)));
            names.insert(f.name.clone());
            match f.name.as_str() {
                "local_timer_entry" | "local_timer_exit" => {
                    // LOCAL_TIMER_VECTOR on x86 (arch/x86/include/asm/irq_vectors.h)
                    assert_eq!(f.field("vector").unwrap().int(rec), 0xec);
                }
                "softirq_raise" | "softirq_entry" | "softirq_exit" => {
                    let vec = f.field("vec").unwrap().int(rec);
                    assert!((0..10).contains(&vec), "softirq vector {vec}");
                }
                "irq_handler_entry" => {
                    assert!(!f.field("name").unwrap().str(rec).is_empty());
                }
                _ => {}
            }
        })
        .unwrap();
        // Trace clock `mono`: the capture was taken ~10,463 s after boot.
        assert!(
            last > 10_000_000_000_000 && last < 11_000_000_000_000,
            "{last}"
        );
        total += info.events;
    }
    assert!(total > 10, "only {total} events");
    assert!(
        names.contains("local_timer_entry") && names.contains("softirq_entry"),
        "{names:?}"
    );
}
