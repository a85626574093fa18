//! Resolution of trace address expressions against the SoC and CSR maps
//! (`docs/trace-format.md` §2): `<region path>[.<register>][[index]]`,
//! `[pN]` partitions, map symbols (`tpb0.sem.inc[3]`), then `+`/`-` offsets.

use soc_map::{RegionId, RegionKind};
use trace_format::{AddrBase, AddrExpr, Index, PathComponent, Span};

use crate::device::Device;

/// A name that does not resolve, with the component to point at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolveError {
    /// Where in the trace.
    pub span: Span,
    /// What is wrong.
    pub message: String,
}

/// What an address expression resolved to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The SoC address.
    pub addr: u64,
    /// The register named, if the expression ended in a register.
    pub register: Option<String>,
}

/// Resolves an address expression.
pub fn resolve(device: &Device, expr: &AddrExpr) -> Result<Resolved, ResolveError> {
    let (base, register) = match &expr.base {
        AddrBase::Literal(a) => (*a, None),
        AddrBase::Path(parts) => resolve_path(device, parts, expr.span)?,
        AddrBase::Tensor(name) => {
            return Err(err(
                expr.span,
                format!(
                    "@{name} names a host tensor: it resolves only when the statement runs with the host runtime"
                ),
            ));
        }
    };
    let addr = expr.apply_offsets(base).ok_or_else(|| ResolveError {
        span: expr.span,
        message: format!(
            "`{expr}` is outside the 64-bit address space after its offsets (base {base:#x})"
        ),
    })?;
    Ok(Resolved { addr, register })
}

fn err(span: Span, message: String) -> ResolveError {
    ResolveError { span, message }
}

/// Only the last name of a map symbol may carry an index (`sem.inc[3]`,
/// not `sem[2].inc[3]`): an index anywhere else would be silently dropped.
fn symbol_indices(parts: &[PathComponent], lower: &[String]) -> Result<(), ResolveError> {
    let inner = parts.split_last().map_or(&[][..], |(_, inner)| inner);
    match inner.iter().find(|p| p.index.is_some()) {
        Some(p) => Err(err(
            p.span,
            format!(
                "`{}` takes no index: only the register (the last name, as in `{}[i]`) does",
                p.name,
                lower.join(".")
            ),
        )),
        None => Ok(()),
    }
}

fn resolve_path(
    device: &Device,
    parts: &[PathComponent],
    whole: Span,
) -> Result<(u64, Option<String>), ResolveError> {
    let map = device.map();
    let first = parts
        .first()
        .ok_or_else(|| err(whole, "empty address".into()))?;

    // Longest prefix of plain components naming a region.
    let mut region: Option<RegionId> = None;
    let mut name = String::new();
    let mut used = 0;
    for (i, c) in parts.iter().enumerate() {
        let candidate = if name.is_empty() {
            c.name.clone()
        } else {
            format!("{name}.{}", c.name)
        };
        match map.by_name(&candidate) {
            Some(id) => {
                region = Some(id);
                name = candidate;
                used = i + 1;
                if c.index.is_some() {
                    break;
                }
            }
            None => break,
        }
    }
    let Some(mut region) = region else {
        let roots: Vec<&str> = map.roots.iter().map(|&r| &*map.region(r).stem).collect();
        let mut stems: Vec<&str> = Vec::new();
        for stem in roots {
            if !stems.contains(&stem) {
                stems.push(stem);
            }
        }
        return Err(err(
            first.span,
            format!(
                "unknown name `{}` (top-level regions: {}; e.g. hbm0, tpb0.sbuf[p5], eng0.m2s.q0.tdrtp_inc)",
                first.name,
                stems.join(", ")
            ),
        ));
    };
    let mut addr = map.region(region).base;

    // A partition index on the last region component.
    let last_region_part = &parts[used - 1];
    match last_region_part.index {
        Some(Index::Partition(p)) => {
            let r = map.region(region);
            let Some(geom) = r.partitions else {
                return Err(err(
                    last_region_part.span,
                    format!(
                        "`{}` has no partitions; [pN] applies to sbuf and psum",
                        r.name
                    ),
                ));
            };
            if p >= u64::from(geom.count) {
                return Err(err(
                    last_region_part.span,
                    format!(
                        "partition {p} is out of range for {} (0..{})",
                        r.name, geom.count
                    ),
                ));
            }
            addr += p * geom.stride_bytes;
        }
        // A plain index on a region is wrong wherever it sits: silently
        // dropping it (`eng0.m2s.q0[5].q_cfg`) would name another address.
        Some(Index::Plain(i)) => {
            return Err(err(
                last_region_part.span,
                format!(
                    "`{}[{i}]`: a region takes no index here (use the instance number in the name, e.g. q3, or [pN] for a partition)",
                    last_region_part.name
                ),
            ));
        }
        _ => {}
    }
    let rest = &parts[used..];
    if rest.is_empty() {
        return Ok((addr, None));
    }
    if last_region_part.index.is_some() && !matches!(last_region_part.index, Some(Index::Plain(_)))
    {
        return Err(err(
            rest[0].span,
            format!("nothing can follow the partition index of `{name}`"),
        ));
    }

    // Map symbols of this region or an ancestor: the longest dotted prefix of
    // the remaining names, e.g. `sem.inc` → `evt_sem.SEM_INC`.
    let lower: Vec<String> = rest.iter().map(|c| c.name.to_ascii_lowercase()).collect();
    let mut symbol_hit: Option<(usize, String, RegionId)> = None;
    let mut scope = Some(region);
    while let Some(s) = scope {
        let r = map.region(s);
        for take in (1..=lower.len()).rev() {
            if let Some(target) = r.symbols.get(&lower[..take].join(".")) {
                symbol_hit = Some((take, target.clone(), s));
                break;
            }
        }
        if symbol_hit.is_some() {
            break;
        }
        scope = r.parent;
    }
    let (reg_part, reg_name, reg_index): (&PathComponent, String, Option<u64>) =
        if let Some((take, target, scope_region)) = symbol_hit {
            // The target is `<sub-region path>.<REGISTER>` relative to the scope.
            let (sub, reg) = target.rsplit_once('.').unwrap_or(("", target.as_str()));
            let scope_name = map.region(scope_region).name.clone();
            let full = if sub.is_empty() {
                scope_name.clone()
            } else {
                format!("{scope_name}.{sub}")
            };
            region = map.by_name(&full).ok_or_else(|| {
                err(
                    rest[0].span,
                    format!(
                        "map symbol `{}` names `{full}`, which does not exist",
                        lower[..take].join(".")
                    ),
                )
            })?;
            addr = map.region(region).base;
            symbol_indices(&rest[..take], &lower[..take])?;
            if take != rest.len() {
                return Err(err(
                    rest[take].span,
                    format!("unexpected `{}` after register `{reg}`", rest[take].name),
                ));
            }
            let part = &rest[take - 1];
            let idx = match part.index {
                Some(Index::Plain(i)) => Some(i),
                Some(Index::Partition(_)) => {
                    return Err(err(
                        part.span,
                        "a register takes a plain index [i], not [pN]".into(),
                    ));
                }
                None => None,
            };
            (part, reg.to_string(), idx)
        } else {
            if rest.len() > 1 {
                let r = map.region(region);
                let children: Vec<String> = r
                    .children
                    .iter()
                    .map(|&c| {
                        map.region(c)
                            .name
                            .rsplit('.')
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .take(12)
                    .collect();
                return Err(err(
                    rest[0].span,
                    format!(
                        "unknown name `{}` under `{}`{}",
                        rest[0].name,
                        r.name,
                        if children.is_empty() {
                            String::new()
                        } else {
                            format!(" (it contains: {})", children.join(", "))
                        }
                    ),
                ));
            }
            let part = &rest[0];
            let idx = match part.index {
                Some(Index::Plain(i)) => Some(i),
                Some(Index::Partition(_)) => {
                    return Err(err(
                        part.span,
                        "a register takes a plain index [i], not [pN]".into(),
                    ));
                }
                None => None,
            };
            (part, part.name.clone(), idx)
        };

    let r = map.region(region);
    let Some(block) = device.block_of(region) else {
        let kind = match r.kind {
            RegionKind::Sbuf | RegionKind::Psum => {
                " (use [pN] for a partition and +offset for bytes)"
            }
            _ => "",
        };
        return Err(err(
            reg_part.span,
            format!(
                "unknown name `{}`: `{}` has no registers and no such sub-region{kind}",
                reg_part.name, r.name
            ),
        ));
    };
    let index = match reg_index {
        Some(i) => Some(
            u32::try_from(i)
                .map_err(|_| err(reg_part.span, format!("index {i} is out of range")))?,
        ),
        None => None,
    };
    let Some(offset) = block.find(&reg_name, index) else {
        let msg = match (block.register(&reg_name), index) {
            (Some(spec), None) if spec.array().is_some() => format!(
                "register {} of {} is an array: give an element, e.g. `{}[0]`",
                spec.name(),
                r.name,
                reg_part.name
            ),
            (Some(spec), Some(i)) if spec.array().is_some() => format!(
                "element {i} is out of range for {}[{}] of {}",
                spec.name(),
                spec.array().map_or(0, |a| a.count()),
                r.name
            ),
            (Some(spec), Some(_)) => {
                format!("register {} of {} is not an array", spec.name(), r.name)
            }
            _ => {
                let sub: Vec<String> = r
                    .children
                    .iter()
                    .map(|&c| {
                        map.region(c)
                            .name
                            .rsplit('.')
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .take(8)
                    .collect();
                format!(
                    "unknown name `{}`: not a register of block {} ({}){}",
                    reg_part.name,
                    block.block(),
                    r.name,
                    if sub.is_empty() {
                        String::new()
                    } else {
                        format!(" nor a sub-region ({})", sub.join(", "))
                    }
                )
            }
        };
        return Err(err(reg_part.span, msg));
    };
    let element = block
        .register_at(offset)
        .map(|e| e.name())
        .unwrap_or_else(|| reg_name.to_ascii_uppercase());
    Ok((addr + offset, Some(element)))
}
