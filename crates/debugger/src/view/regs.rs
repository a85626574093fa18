//! `regs`: the registers of a block, one register or one field
//! (docs/user-guide.md §12 "Views"), with `--changed` (away from reset) and
//! a glob on register names.

use soc::Device;

use crate::place::{Source, Value};

/// Every register of `region` with its value (array elements only away
/// from reset), fields decoded for registers away from reset; with
/// `changed`, only those away from reset; with `glob`, only the names it
/// matches (`*`, `?`, case-insensitive).
pub fn show_regs(device: &Device, region: &str, changed: bool, glob: Option<&str>) -> String {
    let Some(id) = device.map().by_name(region) else {
        return one(device, region);
    };
    let Some(block) = device.block_of(id) else {
        return format!("{region} has no registers\n");
    };
    let base = device.map().region(id).base;
    let mut out = format!("registers of {region} ({}):\n", block.block());
    let mut shown = 0;
    for r in block.elements() {
        let Ok(Some(t)) = device.reg_target(base + r.offset()) else {
            continue;
        };
        let v = device.peek_reg(t).unwrap_or(0);
        let reset = block.reset_values().get(r.slot()).copied().unwrap_or(0);
        if (r.index().is_some() || changed) && v == reset {
            continue;
        }
        if glob.is_some_and(|g| !glob_match(g, &r.name())) {
            continue;
        }
        shown += 1;
        let fields: Vec<String> = if v != reset {
            r.spec()
                .decode(v)
                .into_iter()
                .filter(|(_, fv)| *fv != 0)
                .map(|(n, fv)| format!("{n}={fv:#x}"))
                .collect()
        } else {
            Vec::new()
        };
        // A ring or completion-ring base (xDRBP_LOW, xCRBP_LOW): the
        // address it points to, with its HIGH half, by name.
        let points_to = r
            .name()
            .strip_suffix("BP_LOW")
            .filter(|_| v != 0)
            .map(|stem| {
                let high = block
                    .find(&format!("{stem}BP_HIGH"), None)
                    .and_then(|off| device.reg_target(base + off).ok().flatten())
                    .and_then(|t| device.peek_reg(t))
                    .unwrap_or(0);
                let addr = (u64::from(high) << 32) | u64::from(v);
                format!("  -> {}", super::symbolic(device, addr))
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "  {:#06x} {:<24} {v:#010x}{}{points_to}\n",
            r.offset(),
            r.name(),
            if fields.is_empty() {
                String::new()
            } else {
                format!("  {}", fields.join(" "))
            }
        ));
    }
    if shown == 0 && (changed || glob.is_some()) {
        out.push_str(&format!(
            "  (none{}{})\n",
            if changed { " away from reset" } else { "" },
            glob.map(|g| format!(" matching `{g}`")).unwrap_or_default()
        ));
    }
    out
}

/// One register as data: for front ends that show fields as children
/// (the DAP server's variables).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegRow {
    /// Its name (`TDRHP`, `SEM_INC[7]`).
    pub name: String,
    /// Its offset in the block.
    pub offset: u64,
    /// Its value now.
    pub value: u32,
    /// Its reset value.
    pub reset: u32,
    /// Its fields: name, bits (`[23:0]`), value.
    pub fields: Vec<(String, String, u32)>,
}

/// The registers of block `region` (with `changed`, only those away from
/// reset; array elements only away from reset), fields decoded; `None`
/// when `region` is not a block with registers.
pub fn registers(device: &Device, region: &str, changed: bool) -> Option<Vec<RegRow>> {
    let id = device.map().by_name(region)?;
    let block = device.block_of(id)?;
    let base = device.map().region(id).base;
    let mut rows = Vec::new();
    for r in block.elements() {
        let Ok(Some(t)) = device.reg_target(base + r.offset()) else {
            continue;
        };
        let value = device.peek_reg(t).unwrap_or(0);
        let reset = block.reset_values().get(r.slot()).copied().unwrap_or(0);
        if (r.index().is_some() || changed) && value == reset {
            continue;
        }
        let fields = r
            .spec()
            .fields()
            .iter()
            .map(|f| (f.name().to_string(), f.bits(), f.extract(value)))
            .collect();
        rows.push(RegRow {
            name: r.name(),
            offset: r.offset(),
            value,
            reset,
            fields,
        });
    }
    Some(rows)
}

/// One register (every field, with its bits and reset) or one field.
fn one(device: &Device, text: &str) -> String {
    let v = match Value::parse(device, text) {
        Ok(v) => v,
        Err(e) => return format!("{e}\n"),
    };
    let Source::Reg {
        target,
        addr,
        field,
    } = &v.source
    else {
        return format!("`{text}` is memory, not a register: use mem\n");
    };
    let Some(block) = device.block_of(target.region) else {
        return format!("`{text}` has no register map\n");
    };
    let Some(reg) = block.register_at(target.offset) else {
        return format!("`{text}` is not a register\n");
    };
    let value = device.peek_reg(*target).unwrap_or(0);
    let reset = block.reset_values().get(reg.slot()).copied().unwrap_or(0);
    let region = device.map().name(target.region);
    if let Some(f) = field {
        let fv = (value & f.mask) >> f.lsb;
        let fr = (reset & f.mask) >> f.lsb;
        return format!(
            "{region}.{} = {fv:#x} (mask {:#010x}, reset {fr:#x}; register {value:#010x})\n",
            f.name, f.mask
        );
    }
    let spec = reg.spec();
    let mut out = format!(
        "{region}.{} at {addr:#x} ({}, reset {reset:#010x}) = {value:#010x}\n",
        reg.name(),
        spec.access().as_str()
    );
    for f in spec.fields() {
        out.push_str(&format!(
            "  {:<7} {:<24} {:#x}\n",
            f.bits(),
            f.name(),
            f.extract(value)
        ));
    }
    out
}

/// `*` (any run) and `?` (one character), ASCII case-insensitive.
pub(crate) fn glob_match(glob: &str, name: &str) -> bool {
    let g: Vec<char> = glob.to_ascii_lowercase().chars().collect();
    let n: Vec<char> = name.to_ascii_lowercase().chars().collect();
    let (mut gi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ni));
                gi += 1;
            }
            Some(c) if *c == '?' || *c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    gi = sg + 1;
                    ni = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_as_a_shell_does() {
        assert!(glob_match("*cause*", "SEC_A_INT_CAUSE"));
        assert!(glob_match("SEC_?_INT_CAUSE", "sec_d_int_cause"));
        assert!(glob_match("*", "X"));
        assert!(!glob_match("*cause", "SEC_A_INT_CAUSE_SET"));
        assert!(glob_match("sem_read[*]", "SEM_READ[7]"));
        assert!(!glob_match("q_cfg", "Q_CFG2"));
    }
}
