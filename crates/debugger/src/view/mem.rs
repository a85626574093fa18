//! `mem ADDR [LEN]`: a hexdump of memory (docs/user-guide.md §12
//! "Views"), named symbolically, with runs of identical lines folded as
//! hexdump(1) does.

use soc::Device;

use super::symbolic;

/// The most `mem` shows at once.
pub const MAX_MEM_BYTES: u64 = 1 << 20;

/// A hexdump of `len` bytes at `addr` (a number or a trace address).
pub fn show_mem(device: &Device, addr: &str, len: &str) -> String {
    let addr = match trace_format::parse_addr(addr, "<debugger>")
        .map_err(|e| e.message)
        .and_then(|a| soc::resolve(device, &a).map_err(|e| e.message))
    {
        Ok(r) => r.addr,
        Err(e) => return format!("{e}\n"),
    };
    let Ok(asked) = soc_map::parse_u64(len) else {
        return format!("`{len}` is not a length\n");
    };
    let len = asked.min(MAX_MEM_BYTES);
    let mut buf = vec![0u8; len as usize];
    if let Err(e) = device.read_bytes(addr, &mut buf) {
        return format!("{e}\n");
    }
    let mut out = format!("{} ({addr:#x}), {len} bytes:\n", symbolic(device, addr));
    out.push_str(&folded(addr, &buf));
    if asked > len {
        out.push_str(&format!(
            "(the first {len} of {asked} bytes: mem shows at most {MAX_MEM_BYTES} at once)\n"
        ));
    }
    out
}

/// 16 bytes a line with the ASCII column; a run of lines equal to the one
/// before shows as one `*` line.
fn folded(base: u64, data: &[u8]) -> String {
    let mut out = String::new();
    let mut prev: Option<&[u8]> = None;
    let mut starred = false;
    for (i, chunk) in data.chunks(16).enumerate() {
        let at = base + 16 * i as u64;
        let last = (i + 1) * 16 >= data.len();
        if prev == Some(chunk) && chunk.len() == 16 && !last {
            if !starred {
                out.push_str("    *\n");
                starred = true;
            }
            continue;
        }
        starred = false;
        prev = Some(chunk);
        out.push_str(&soc::exec::hexdump(at, chunk));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::folded;

    #[test]
    fn repeated_lines_fold_but_the_last_shows() {
        let mut data = vec![0u8; 16 * 6];
        data[0] = 1;
        let text = folded(0x1000, &data);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("    0x000000001000: 01 00"));
        assert!(lines[1].starts_with("    0x000000001010: 00 00"));
        assert_eq!(lines[2], "    *");
        assert!(lines[3].starts_with("    0x000000001050: 00 00"));
    }
}
