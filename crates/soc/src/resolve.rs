//! Resolution of trace address expressions against the SoC and CSR maps
//! (`docs/trace-format.md` §2): `<region path>[.<register>][[index]]`,
//! `[pN]` partitions, map symbols (`tpb0.sem.inc[3]`), then `+`/`-` offsets.

use soc_map::{RegionId, RegionKind};
use trace_format::{AddrBase, AddrExpr, Index, PathComponent, Span};

use crate::device::Device;

mod names;
use names::{did_you_mean, fold_names};

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
        return Err(unknown_root(device, first));
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
            if let Some(target) = r.symbols().get(&lower[..take].join(".")) {
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
            let scope_name = map.region(scope_region).name.to_string();
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
                return Err(unknown_inner(device, region, &name, rest, &lower));
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
                let sub = child_names(device, region);
                let regs: Vec<String> = block
                    .registers()
                    .iter()
                    .map(|r| r.name().to_ascii_lowercase())
                    .collect();
                format!(
                    "unknown name `{}`: not a register of block {} ({}){}{}",
                    reg_part.name,
                    block.block(),
                    r.name,
                    if sub.is_empty() {
                        String::new()
                    } else {
                        format!(" nor a sub-region ({})", fold_names(&sub))
                    },
                    did_you_mean(&reg_part.name, regs.iter().chain(&sub).map(String::as_str))
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

/// The last names of a region's sub-regions, in map order.
fn child_names(device: &Device, region: RegionId) -> Vec<String> {
    let map = device.map();
    map.region(region)
        .children
        .iter()
        .map(|&c| {
            let n = &map.region(c).name;
            n.rsplit('.').next().unwrap_or(n).to_string()
        })
        .collect()
}

/// A first name that is no top-level region: an instance that does not
/// exist (`tpb9`: tpb0..tpb7), or a typo.
fn unknown_root(device: &Device, first: &PathComponent) -> ResolveError {
    let map = device.map();
    let roots: Vec<String> = map
        .roots
        .iter()
        .map(|&r| map.region(r).name.to_string())
        .collect();
    let stem = first.name.trim_end_matches(|c: char| c.is_ascii_digit());
    let mut same_stem: Vec<(u64, &String)> = roots
        .iter()
        .filter(|r| stem.len() < first.name.len() && r.len() > stem.len() && r.starts_with(stem))
        .filter_map(|r| r[stem.len()..].parse().ok().map(|n| (n, r)))
        .collect();
    same_stem.sort();
    let same_stem: Vec<&String> = same_stem.into_iter().map(|(_, r)| r).collect();
    if !same_stem.is_empty() {
        return err(
            first.span,
            format!(
                "unknown name `{}`: there is no such instance ({})",
                first.name,
                fold_names(&same_stem)
            ),
        );
    }
    let mut stems: Vec<&str> = Vec::new();
    for &r in &map.roots {
        let stem = map.region(r).stem();
        if !stems.contains(&stem) {
            stems.push(stem);
        }
    }
    err(
        first.span,
        format!(
            "unknown name `{}` (top-level regions: {}; e.g. hbm0, tpb0.sbuf[p5], eng0.m2s.q0.tdrtp_inc){}",
            first.name,
            stems.join(", "),
            did_you_mean(&first.name, roots.iter().map(String::as_str))
        ),
    )
}

/// An unknown name followed by more names, under `region` (named
/// `region_name` as written): blames the component that is wrong — the
/// name after a map symbol's prefix (`tpb0.sem.rd`), a field after a
/// register (`q0.Q_CFG.EN_PREF`, refused as such), or an unknown
/// sub-region.
fn unknown_inner(
    device: &Device,
    region: RegionId,
    region_name: &str,
    rest: &[PathComponent],
    lower: &[String],
) -> ResolveError {
    let map = device.map();
    // A map symbol's prefix (`sem.` of `sem.read`): the name after it is
    // the wrong one.
    let mut scope = Some(region);
    while let Some(sc) = scope {
        let r = map.region(sc);
        for k in (1..rest.len()).rev() {
            let prefix = format!("{}.", lower[..k].join("."));
            let mut next: Vec<&str> = Vec::new();
            for key in r.symbols().keys() {
                if let Some(tail) = key.strip_prefix(&prefix) {
                    let head = tail.split('.').next().unwrap_or(tail);
                    if !next.contains(&head) {
                        next.push(head);
                    }
                }
            }
            if !next.is_empty() {
                let written: Vec<&str> = rest[..k].iter().map(|c| c.name.as_str()).collect();
                return err(
                    rest[k].span,
                    format!(
                        "unknown name `{}` after `{region_name}.{}` (expected one of: {}){}",
                        rest[k].name,
                        written.join("."),
                        fold_names(&next),
                        did_you_mean(&rest[k].name, next.iter().copied())
                    ),
                );
            }
        }
        scope = r.parent;
    }
    // A register followed by a field: addresses name whole registers.
    if let Some(block) = device.block_of(region)
        && let Some(spec) = block.register(&rest[0].name)
    {
        let reg = format!("{region_name}.{}", rest[0].name);
        let Some(field) = (rest.len() == 2)
            .then(|| spec.field(&rest[1].name))
            .flatten()
        else {
            let fields: Vec<&str> = spec.fields().iter().map(|f| f.name()).collect();
            return err(
                rest[1].span,
                format!(
                    "`{}` is not a field of register {} ({reg}), and an address names a whole register{}{}",
                    rest[1].name,
                    spec.name(),
                    if fields.is_empty() {
                        String::new()
                    } else {
                        format!(" (its fields: {})", fields.join(", "))
                    },
                    did_you_mean(&rest[1].name, fields.iter().copied())
                ),
            );
        };
        return err(
            rest[1].span,
            format!(
                "`{}.{}` names a field (bits {}, mask {:#010x}): an address names a whole register; use `{reg}` (to check the field: read32 {reg} == VALUE mask={:#x})",
                spec.name(),
                field.name(),
                field.bits(),
                field.mask(),
                field.mask()
            ),
        );
    }
    let children = child_names(device, region);
    err(
        rest[0].span,
        format!(
            "unknown name `{}` under `{}`{}{}",
            rest[0].name,
            map.region(region).name,
            if children.is_empty() {
                String::new()
            } else {
                format!(" (it contains: {})", fold_names(&children))
            },
            did_you_mean(&rest[0].name, children.iter().map(String::as_str))
        ),
    )
}
