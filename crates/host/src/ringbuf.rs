//! The ftrace ring buffer's binary pages (`per_cpu/cpuN/trace_pipe_raw`) and the event
//! `format` files that say where each field lies.
//!
//! Reading binary pages instead of the text `trace_pipe` gives nanosecond timestamps (the text
//! prints microseconds) and costs no formatting in the kernel. The layout is the one
//! `events/header_page` and `events/header_event` describe (Linux `kernel/trace/ring_buffer.c`):
//!
//! - page header: `u64 timestamp`, then `local_t commit` (8 bytes on 64-bit kernels): the
//!   number of data bytes, with bit 31 set when events were lost before this page
//!   (`RB_MISSED_EVENTS`); data starts after it;
//! - each event: a 32-bit word, `type_len:5` (low bits) and `time_delta:27`, then `array[]`:
//!   `type_len` 1..=28 is a data event of `type_len * 4` bytes; 0 a data event whose length
//!   (in bytes, counting that word) is in `array[0]`; 29 padding (`time_delta == 0`: the rest
//!   of the page is empty); 30 a time extension, `delta = array[0] << 27 | time_delta`; 31 an
//!   absolute time stamp.
//!
//! Event data begins with `common_type` (u16): the event's ID from its `format` file.

use crate::error::HostError;
use std::collections::HashMap;
use std::path::Path;

/// One field of an event, from its `format` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `__data_loc char[]`: the value is `(length << 16) | offset` of a string in the record.
    pub data_loc: bool,
}

/// An event's ID and fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pub name: String,
    pub id: u16,
    pub fields: HashMap<String, Field>,
}

impl Format {
    /// Parse an `events/SYSTEM/NAME/format` file's text.
    pub fn parse(text: &str) -> Result<Format, String> {
        let mut name = None;
        let mut id = None;
        let mut fields = HashMap::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("name:") {
                name = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("ID:") {
                id = Some(
                    v.trim()
                        .parse::<u16>()
                        .map_err(|e| format!("ID '{}': {e}", v.trim()))?,
                );
            } else if let Some(decl) = line.strip_prefix("field:") {
                // field:int irq;	offset:8;	size:4;	signed:1;
                let mut parts = decl.split(';').map(str::trim);
                let decl = parts.next().unwrap_or_default();
                let mut offset = None;
                let mut size = None;
                let mut signed = false;
                for p in parts {
                    if let Some(v) = p.strip_prefix("offset:") {
                        offset = v.parse::<usize>().ok();
                    } else if let Some(v) = p.strip_prefix("size:") {
                        size = v.parse::<usize>().ok();
                    } else if let Some(v) = p.strip_prefix("signed:") {
                        signed = v == "1";
                    }
                }
                let field_name = decl
                    .rsplit(|c: char| c.is_whitespace() || c == '*')
                    .next()
                    .unwrap_or_default()
                    .split('[')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                let (Some(offset), Some(size)) = (offset, size) else {
                    return Err(format!("field line without offset or size: {line}"));
                };
                // A record is a few hundred bytes; a field that ends past usize is corrupt.
                if offset.checked_add(size).is_none() {
                    return Err(format!(
                        "field '{field_name}' at offset {offset} of size {size} ends past the \
                         largest possible record"
                    ));
                }
                fields.insert(
                    field_name,
                    Field {
                        offset,
                        size,
                        signed,
                        data_loc: decl.starts_with("__data_loc"),
                    },
                );
            }
        }
        Ok(Format {
            name: name.ok_or("no 'name:' line")?,
            id: id.ok_or("no 'ID:' line")?,
            fields,
        })
    }

    /// Read and parse a `format` file.
    pub fn read(path: &Path) -> Result<Format, HostError> {
        let text = std::fs::read_to_string(path).map_err(|e| HostError::io(path, e))?;
        Format::parse(&text).map_err(|message| HostError::Parse {
            path: path.to_path_buf(),
            line: 0,
            message,
        })
    }

    /// A field's location, or an error naming the event and field (a kernel whose event lacks
    /// a field irqlab needs).
    pub fn field(&self, name: &str) -> Result<Field, HostError> {
        self.fields.get(name).cloned().ok_or_else(|| {
            HostError::Invalid(format!(
                "trace event {} has no field '{name}' on this kernel",
                self.name
            ))
        })
    }
}

impl Field {
    /// The field as an integer (sign-extended when signed); 0 if the record is too short.
    pub fn int(&self, rec: &[u8]) -> i64 {
        let Some(b) = self.bytes(rec) else {
            return 0;
        };
        match (self.size, self.signed) {
            (1, true) => i64::from(b[0] as i8),
            (1, false) => i64::from(b[0]),
            (2, true) => i64::from(i16::from_le_bytes([b[0], b[1]])),
            (2, false) => i64::from(u16::from_le_bytes([b[0], b[1]])),
            (4, true) => i64::from(i32::from_le_bytes(b.try_into().expect("4"))),
            (4, false) => i64::from(u32::from_le_bytes(b.try_into().expect("4"))),
            (8, _) => i64::from_le_bytes(b.try_into().expect("8")),
            _ => 0,
        }
    }

    /// A fixed `char name[N]` field (such as `sched_switch`'s `prev_comm`), up to its NUL.
    pub fn chars(&self, rec: &[u8]) -> String {
        let bytes = self.bytes(rec).unwrap_or_default();
        let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
        String::from_utf8_lossy(bytes).into_owned()
    }

    /// The field's bytes in `rec`; none if the record is too short (or the field, built by
    /// hand, ends past usize).
    fn bytes<'a>(&self, rec: &'a [u8]) -> Option<&'a [u8]> {
        rec.get(self.offset..self.offset.checked_add(self.size)?)
    }

    /// A `__data_loc char[]` string field.
    pub fn str<'a>(&self, rec: &'a [u8]) -> &'a str {
        let loc = self.int(rec) as u32;
        let (off, len) = ((loc & 0xFFFF) as usize, (loc >> 16) as usize);
        let bytes = rec.get(off..off + len).unwrap_or_default();
        let bytes = bytes.split(|&b| b == 0).next().unwrap_or_default();
        std::str::from_utf8(bytes).unwrap_or("?")
    }
}

/// Size of the page header before the data on 64-bit kernels (`events/header_page`: `commit`
/// at offset 8, size 8; data at 16).
pub const PAGE_HEADER_BYTES: usize = 16;
const RB_MISSED_EVENTS: u64 = 1 << 31;
const RB_MISSED_STORED: u64 = 1 << 30;
const COMMIT_MASK: u64 = (1 << 27) - 1;

/// What one page held.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PageInfo {
    pub events: usize,
    /// The kernel lost events before this page (the count is in `per_cpu/cpuN/stats`).
    pub missed_before: bool,
}

/// Walk the events of one page, calling `f(timestamp_ns, record)` for each data event; the
/// record starts at `common_type`. Errors describe a malformed page.
pub fn parse_page(page: &[u8], mut f: impl FnMut(u64, &[u8])) -> Result<PageInfo, String> {
    if page.len() < PAGE_HEADER_BYTES {
        return Err(format!(
            "page of {} bytes is shorter than its header",
            page.len()
        ));
    }
    let mut ts = u64::from_le_bytes(page[0..8].try_into().expect("8"));
    let commit = u64::from_le_bytes(page[8..16].try_into().expect("8"));
    let size = (commit & COMMIT_MASK) as usize;
    let info_missed = commit & (RB_MISSED_EVENTS | RB_MISSED_STORED) != 0;
    let end = PAGE_HEADER_BYTES + size;
    if end > page.len() {
        return Err(format!(
            "page says {size} data bytes but only {} follow its header",
            page.len() - PAGE_HEADER_BYTES
        ));
    }
    let data = &page[..end];
    let mut at = PAGE_HEADER_BYTES;
    let mut events = 0;
    // Offsets and timestamps come from the page: a corrupt one must not wrap them (a panic in
    // debug builds, a wrong time or an endless walk in release ones), so every sum is checked
    // and the page refused, naming the event's byte.
    let past = |at: usize| format!("event at byte {at} runs past the data");
    let add_ts = |ts: u64, delta: u64, at: usize| {
        ts.checked_add(delta).ok_or_else(|| {
            format!("event at byte {at}: timestamp {ts} ns + delta {delta} ns passes 2^64 ns")
        })
    };
    let word = |at: usize| -> Result<u32, String> {
        at.checked_add(4)
            .and_then(|e| data.get(at..e))
            .map(|b| u32::from_le_bytes(b.try_into().expect("4")))
            .ok_or_else(|| format!("event header at byte {at} runs past the data"))
    };
    while at.checked_add(4).is_some_and(|e| e <= end) {
        let h = word(at)?;
        let type_len = h & 0x1F;
        let delta = u64::from(h >> 5);
        match type_len {
            29 => {
                if delta == 0 {
                    break; // the rest of the page is empty
                }
                let len = word(at + 4)? as usize;
                at = (at + 4).checked_add(len.max(4)).ok_or_else(|| past(at))?;
            }
            30 => {
                ts = add_ts(ts, (u64::from(word(at + 4)?) << 27) | delta, at)?;
                at += 8;
            }
            31 => {
                let abs = (u64::from(word(at + 4)?) << 27) | delta;
                // Only the low 59 bits are stored; the top bits are the page's.
                ts = (ts & !((1u64 << 59) - 1)) | abs;
                at += 8;
            }
            0 => {
                let len = word(at + 4)? as usize; // counts the length word itself
                let stop = (at + 4).checked_add(len).filter(|&s| len >= 4 && s <= end);
                let Some(stop) = stop else {
                    return Err(format!("event at byte {at} has a bad length {len}"));
                };
                ts = add_ts(ts, delta, at)?;
                f(ts, &data[at + 8..stop]);
                events += 1;
                at = stop;
            }
            n => {
                let stop = at + 4 + n as usize * 4;
                if stop > end {
                    return Err(past(at));
                }
                ts = add_ts(ts, delta, at)?;
                f(ts, &data[at + 4..stop]);
                events += 1;
                at = stop;
            }
        }
    }
    Ok(PageInfo {
        events,
        missed_before: info_missed,
    })
}

/// The page's header says the kernel lost events before it (`RB_MISSED_EVENTS`).
pub fn lost_before(page: &[u8]) -> bool {
    page.get(8..16)
        .map(|b| {
            u64::from_le_bytes(b.try_into().expect("8")) & (RB_MISSED_EVENTS | RB_MISSED_STORED)
                != 0
        })
        .unwrap_or(false)
}

/// The event ID of a record (`common_type`).
pub fn record_type(rec: &[u8]) -> u16 {
    rec.get(0..2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IRQ_HANDLER_ENTRY: &str = "name: irq_handler_entry
ID: 225
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;

print fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)
";

    #[test]
    fn format_files_give_ids_and_fields() {
        let f = Format::parse(IRQ_HANDLER_ENTRY).unwrap();
        assert_eq!(f.id, 225);
        assert_eq!(f.name, "irq_handler_entry");
        let irq = f.field("irq").unwrap();
        assert_eq!((irq.offset, irq.size, irq.signed), (8, 4, true));
        assert!(f.field("name").unwrap().data_loc);
        assert!(f.field("common_pid").unwrap().signed);
        assert!(f.field("nope").is_err());
    }

    /// A page built by the layout of `events/header_page` and `header_event`.
    fn page(events: &[(u32, Vec<u8>)], extend: Option<u64>) -> Vec<u8> {
        let mut data = Vec::new();
        if let Some(d) = extend {
            data.extend_from_slice(&(30 | (((d & ((1 << 27) - 1)) as u32) << 5)).to_le_bytes());
            data.extend_from_slice(&((d >> 27) as u32).to_le_bytes());
        }
        for (delta, payload) in events {
            assert!(payload.len().is_multiple_of(4));
            let words = (payload.len() / 4) as u32;
            data.extend_from_slice(&(words | (delta << 5)).to_le_bytes());
            data.extend_from_slice(payload);
        }
        let mut p = Vec::new();
        p.extend_from_slice(&1_000_000u64.to_le_bytes());
        p.extend_from_slice(&(data.len() as u64).to_le_bytes());
        p.extend_from_slice(&data);
        p.resize(4096, 0);
        p
    }

    fn record(id: u16, irq: i32, name: &str) -> Vec<u8> {
        let mut r = vec![0u8; 16];
        r[0..2].copy_from_slice(&id.to_le_bytes());
        r[8..12].copy_from_slice(&irq.to_le_bytes());
        let loc = (((name.len() + 1) as u32) << 16) | 16;
        r[12..16].copy_from_slice(&loc.to_le_bytes());
        r.extend_from_slice(name.as_bytes());
        r.push(0);
        while !r.len().is_multiple_of(4) {
            r.push(0);
        }
        r
    }

    #[test]
    fn pages_give_timestamps_and_records() {
        let f = Format::parse(IRQ_HANDLER_ENTRY).unwrap();
        let p = page(
            &[
                (100, record(225, 36, "virtio1-req.0")),
                (50, record(225, 41, "rx")),
            ],
            Some(1 << 28),
        );
        let mut seen = Vec::new();
        let info = parse_page(&p, |ts, rec| {
            assert_eq!(record_type(rec), 225);
            seen.push((
                ts,
                f.field("irq").unwrap().int(rec),
                f.field("name").unwrap().str(rec).to_string(),
            ));
        })
        .unwrap();
        assert_eq!(info.events, 2);
        assert!(!info.missed_before);
        let t0 = 1_000_000 + (1 << 28) + 100;
        assert_eq!(seen[0], (t0, 36, "virtio1-req.0".to_string()));
        assert_eq!(seen[1], (t0 + 50, 41, "rx".to_string()));
    }

    #[test]
    fn malformed_pages_are_errors_not_panics() {
        let mut p = page(&[(1, record(225, 1, "x"))], None);
        p[8..16].copy_from_slice(&5000u64.to_le_bytes()); // more data than the page holds
        assert!(parse_page(&p, |_, _| {}).is_err());
        assert!(parse_page(&p[..8], |_, _| {}).is_err());
        let mut p = page(&[], None);
        p[8..16].copy_from_slice(&8u64.to_le_bytes());
        p[16..20].copy_from_slice(&0u32.to_le_bytes()); // type_len 0 ...
        p[20..24].copy_from_slice(&400u32.to_le_bytes()); // ... with a length past the end
        assert!(parse_page(&p, |_, _| {}).is_err());
    }

    /// Timestamps that pass 2^64 are a corrupt page, refused with the event's byte offset (they
    /// were added unchecked: a panic in debug builds, a wrapped time in release ones). Found
    /// by `fuzz/`'s ringbuf_page target.
    #[test]
    fn timestamps_past_u64_are_refused_not_wrapped() {
        // A data event's delta on a page whose own timestamp is near the end of u64.
        let mut p = page(&[(100, record(225, 1, "x"))], None);
        p[0..8].copy_from_slice(&(u64::MAX - 10).to_le_bytes());
        let e = parse_page(&p, |_, _| {}).unwrap_err();
        assert!(e.contains("byte 16") && e.contains("timestamp"), "{e}");
        // The longest time extension (type 30), 2^59 - 1 ns, twice from 2^64 - 2^59: the first
        // reaches u64::MAX, the second passes it.
        let mut p = page(&[(1, record(225, 1, "x"))], Some((1 << 59) - 1));
        let ext = p[16..24].to_vec();
        let data_len = u64::from_le_bytes(p[8..16].try_into().unwrap()) as usize;
        p.splice(16..16, ext);
        p.truncate(4096);
        p[8..16].copy_from_slice(&((data_len + 8) as u64).to_le_bytes());
        p[0..8].copy_from_slice(&(u64::MAX - (1 << 59) + 1).to_le_bytes());
        let e = parse_page(&p, |_, _| {}).unwrap_err();
        assert!(e.contains("byte 24") && e.contains("timestamp"), "{e}");
        // The same page from 0 is fine: 2^60 - 2 + 1 ns.
        p[0..8].copy_from_slice(&0u64.to_le_bytes());
        let info = parse_page(&p, |ts, _| assert_eq!(ts, (1 << 60) - 1)).unwrap();
        assert_eq!(info.events, 1);
    }

    /// A `format` file whose offset and size pass usize::MAX is refused, naming the field; a
    /// field so placed reads as absent (0, empty), not a panic. Found by `fuzz/`'s
    /// trace_format target.
    #[test]
    fn fields_past_usize_are_refused_and_read_as_absent() {
        let text = IRQ_HANDLER_ENTRY.replace("offset:8;", "offset:18446744073709551615;");
        let e = Format::parse(&text).unwrap_err();
        assert!(
            e.contains("'irq'") && e.contains("18446744073709551615"),
            "{e}"
        );
        let far = Field {
            offset: usize::MAX,
            size: 4,
            signed: true,
            data_loc: false,
        };
        let rec = [0u8; 64];
        assert_eq!(far.int(&rec), 0);
        assert_eq!(far.chars(&rec), "");
        assert_eq!(far.str(&rec), "");
    }
}
