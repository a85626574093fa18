//! Builders of the v3 host-operation directives (`alloc`, `copyin`, …;
//! docs/trace-format.md §6).

use super::*;

/// A host statement, with the `status=` expectation when given.
fn host_status(args: &mut Args<'_>, op: HostOp) -> Option<StatementKind> {
    let status = match args.key("status") {
        Some((Value::Choice(c), _)) => Some(c),
        _ => None,
    };
    Some(StatementKind::Host { op, status })
}

fn name_arg(args: &mut Args<'_>) -> Option<String> {
    match args.positional(0) {
        Some(Value::Name(n)) => Some(n),
        _ => None,
    }
}

fn on_off(args: &mut Args<'_>, key: &str) -> Option<bool> {
    match args.key(key) {
        Some((Value::Choice(c), _)) => Some(c == "on"),
        _ => None,
    }
}

/// The optional data spec (byte | pattern [seed] | file [file_offset]);
/// `Err(())` after reporting a conflict.
fn host_data(args: &mut Args<'_>) -> Result<Option<HostData>, ()> {
    let byte = args.key_num("byte");
    let pattern = args.key("pattern");
    let seed = args.key_num("seed");
    let file = args.key_path("file");
    let file_offset = args.key_num("file_offset");
    let given =
        usize::from(byte.is_some()) + usize::from(pattern.is_some()) + usize::from(file.is_some());
    if given > 1 {
        let span = args.line;
        args.error(span, "use one of 'byte', 'pattern' and 'file'");
        return Err(());
    }
    if let (Some((_, span)), None) = (&seed, &pattern) {
        let span = *span;
        args.error(span, "'seed' is only used with 'pattern'");
        return Err(());
    }
    if let (Some((_, span)), None) = (&file_offset, &file) {
        let span = *span;
        args.error(span, "'file_offset' is only used with 'file'");
        return Err(());
    }
    Ok(match (byte, pattern, file) {
        (Some((b, _)), _, _) => Some(HostData::Byte(u8::try_from(b).map_err(|_| ())?)),
        (_, Some((Value::Choice(p), _)), _) => Some(HostData::Pattern {
            kind: if p == "incr32" {
                FillPattern::Incr32
            } else {
                FillPattern::Incr8
            },
            seed: seed.map_or(0, |(s, _)| s),
        }),
        (_, _, Some(path)) => Some(HostData::File {
            path,
            offset: file_offset.map_or(0, |(o, _)| o),
        }),
        _ => None,
    })
}

pub(super) fn build_alloc(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    let (size, _) = args.key_num("size")?;
    let host_mem = match args.flags.as_slice() {
        [("host", _)] => true,
        [_, (_, second), ..] => {
            let second = *second;
            args.error(second, "alloc takes one location: device or host");
            return None;
        }
        _ => false,
    };
    let channel = args.key_u32("channel").map(|(c, _)| c);
    let nc = args.key_u32("nc").map(|(n, _)| n);
    let usage = match args.key("usage") {
        Some((Value::Choice(u), _)) => u.to_string(),
        _ => "tensor".to_string(),
    };
    let align = match args.key_num("align") {
        // The driver's and the runtime's alignment arithmetic is a mask
        // (docs/host-runtime.md §3.2): 0 (none) or a power of two.
        Some((a, span)) if a != 0 && !a.is_power_of_two() => {
            args.error(
                span,
                format!("align must be a power of two (or 0 for none), found {a:#x}"),
            );
            return None;
        }
        Some((a, _)) => a,
        None => 0,
    };
    let hint = args.key_path("hint").map(|p| p.path);
    let allocator = match args.key("allocator") {
        Some((Value::Name(n), _)) => Some(n),
        _ => None,
    };
    host_status(
        args,
        HostOp::Alloc {
            name,
            size,
            host: host_mem,
            channel,
            nc,
            usage,
            align,
            hint,
            allocator,
        },
    )
}

pub(super) fn build_allocator(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    let nc = args.key_u32("nc").map_or(0, |(n, _)| n);
    host_status(args, HostOp::Allocator { name, nc })
}

pub(super) fn build_allocator_destroy(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    host_status(args, HostOp::AllocatorDestroy { name })
}

pub(super) fn build_scratchpad(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    let (size, _) = args.key_num("size")?;
    let nc = args.key_u32("nc").map_or(0, |(n, _)| n);
    host_status(args, HostOp::Scratchpad { name, size, nc })
}

pub(super) fn build_copyin(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    let offset = args.key_num("offset").map_or(0, |(o, _)| o);
    let len = args.key_num("len").map(|(l, _)| l);
    let Some(data) = host_data(args).ok()? else {
        let (line, usage) = (args.line, args.usage());
        args.error(
            line.after(),
            format!("copyin needs 'byte', 'pattern' or 'file' ({usage})"),
        );
        return None;
    };
    host_status(
        args,
        HostOp::CopyIn {
            name,
            data,
            offset,
            len,
        },
    )
}

pub(super) fn build_copyout(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    let offset = args.key_num("offset").map_or(0, |(o, _)| o);
    let len = args.key_num("len").map(|(l, _)| l);
    let digest = match args.key("sha256") {
        Some((Value::Digest(d), span)) => Some((d, span)),
        _ => None,
    };
    let data = host_data(args).ok()?;
    let check = match (data, digest) {
        (Some(_), Some((_, span))) => {
            args.error(span, "'sha256' cannot be used with a data check");
            return None;
        }
        (Some(d), None) => Some(HostCheck::Data(d)),
        (None, Some((d, _))) => Some(HostCheck::Sha256(d)),
        (None, None) => None,
    };
    host_status(
        args,
        HostOp::CopyOut {
            name,
            offset,
            len,
            check,
        },
    )
}

pub(super) fn build_batch_copy(args: &mut Args<'_>) -> Option<StatementKind> {
    let to_device = match args.flags.as_slice() {
        [("in", _)] => true,
        [(_, _)] => false,
        [] => {
            let (line, usage) = (args.line, args.usage());
            args.error(
                line,
                format!("batch_copy needs a direction: in or out ({usage})"),
            );
            return None;
        }
        [_, (_, second), ..] => {
            let second = *second;
            args.error(second, "batch_copy takes one direction: in or out");
            return None;
        }
    };
    let tensors = match args.key("tensors") {
        Some((Value::Names(n), _)) => n,
        _ => return None,
    };
    let (len, _) = args.key_num("len")?;
    let Some(data) = host_data(args).ok()? else {
        let (line, usage) = (args.line, args.usage());
        args.error(
            line.after(),
            format!("batch_copy needs 'byte' or 'pattern' ({usage})"),
        );
        return None;
    };
    host_status(
        args,
        HostOp::BatchCopy {
            to_device,
            tensors,
            len,
            data,
        },
    )
}

pub(super) fn build_free(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    host_status(args, HostOp::Free { name })
}

pub(super) fn build_acquire(args: &mut Args<'_>) -> Option<StatementKind> {
    let name = name_arg(args)?;
    host_status(args, HostOp::Acquire { name })
}

pub(super) fn build_mem_stats(args: &mut Args<'_>) -> Option<StatementKind> {
    host_status(args, HostOp::MemStats)
}

pub(super) fn build_runtime(args: &mut Args<'_>) -> Option<StatementKind> {
    let zerocopy = on_off(args, "zerocopy");
    let bar4_write_size = args.key_num("bar4_write_size").map(|(n, _)| n);
    let dml_log = args.key_num("dml_log").map(|(n, _)| n);
    let dml_verbose = on_off(args, "dml_verbose");
    let metrics = on_off(args, "metrics");
    host_status(
        args,
        HostOp::Runtime {
            zerocopy,
            bar4_write_size,
            dml_log,
            dml_verbose,
            metrics,
        },
    )
}

pub(super) fn build_driver(args: &mut Args<'_>) -> Option<StatementKind> {
    let aligned_alloc = on_off(args, "aligned_alloc");
    let attached = on_off(args, "attached");
    let drop_batch = args.key_num("drop_batch").map(|(n, _)| n);
    host_status(
        args,
        HostOp::Driver {
            aligned_alloc,
            attached,
            drop_batch,
        },
    )
}
