//! `neuron-sim ioctl`: the driver's ioctl ABI as data (`ioctl-abi`).

use clap::Subcommand;
use soc_map::Hex;

use crate::{Failure, bad_input};

#[derive(Debug, Subcommand)]
pub(crate) enum IoctlCmd {
    /// List every supported ioctl: number, direction, nr, sizes, names.
    List {
        /// Print JSON (an array of {name, dir, nr, size, value, …}).
        #[arg(long)]
        json: bool,
    },
    /// Re-issue a recorded ioctl stream (`run --ioctl-record FILE`) on a
    /// fresh kernel driver and device, checking every result, argument
    /// copy-out and user-memory access against the recording.
    Replay {
        /// The recording (JSON lines; `-`: standard input).
        file: std::path::PathBuf,
        /// Print the replay report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Split a 32-bit request number into its _IOC fields and name it.
    Decode {
        /// The number (0x-prefixed hex or decimal), e.g. 0x80384E66.
        value: Hex,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(cmd: IoctlCmd, maps: &crate::Maps) -> Result<u8, Failure> {
    match cmd {
        IoctlCmd::List { json } => {
            let rows = ioctl_abi::list();
            if json {
                crate::json_out::print(crate::json_out::IoctlList { ioctls: rows })?;
            } else {
                out!("{}", ioctl_abi::listing::render_text(&rows));
            }
            Ok(0)
        }
        IoctlCmd::Replay { file, json } => {
            let text = crate::input::read_text_or_stdin(
                &file,
                "ioctl recording",
                crate::input::InputKind::IoctlRecording,
            )?;
            let rec = ioctl_bus::Recording::from_jsonl(&text).map_err(|e| {
                bad_input(format!(
                    "{}:{}:{}: {}",
                    crate::input::name_of(&file),
                    e.line,
                    e.column,
                    e.message
                ))
            })?;
            // The same maps as the recording run (--soc-map / --csr-maps).
            let mut driver =
                kdriver::KernelDriver::new(maps.device()?, kdriver::KdriverConfig::default())
                    .map_err(bad_input)?;
            match ioctl_bus::replay(&rec, &mut driver) {
                Ok(report) => {
                    // Nothing re-issued is nothing checked: not a match.
                    let issued = report.ioctls + report.mmap_reads + report.mmap_writes;
                    if json {
                        crate::json_out::print(report)?;
                    } else {
                        let halted = match report.halted_at_seq {
                            Some(seq) => format!(" (from the recorded bus failure at seq {seq})"),
                            None => String::new(),
                        };
                        outln!(
                            "replayed {} records: {} ioctls, {} mmap reads, {} mmap writes, {} user reads, {} user writes, {} not issued{halted}; {}",
                            report.records,
                            report.ioctls,
                            report.mmap_reads,
                            report.mmap_writes,
                            report.user_reads,
                            report.user_writes,
                            report.not_issued,
                            if issued == 0 {
                                "nothing was re-issued, so nothing was checked"
                            } else if report.not_issued > 0 {
                                "every re-issued result matched"
                            } else {
                                "every result matched"
                            }
                        );
                    }
                    Ok(u8::from(issued == 0))
                }
                // With --json stdout holds only JSON: the mismatch goes to
                // stderr, as any error of a --json run (user guide §9).
                Err(e) if json => {
                    eprintln!("{}: {e}", file.display());
                    Ok(1)
                }
                Err(e) => {
                    outln!("{}: {e}", file.display());
                    Ok(1)
                }
            }
        }
        IoctlCmd::Decode { value, json } => {
            let value = u32::try_from(value.0)
                .map_err(|_| bad_input(format!("{value} does not fit 32 bits")))?;
            let info = ioctl_abi::listing::describe(value);
            if json {
                crate::json_out::print(info)?;
            } else {
                out!("{}", describe_text(&info));
            }
            Ok(0)
        }
    }
}

fn describe_text(info: &ioctl_abi::listing::NumberInfo) -> String {
    let d = &info.decoded;
    let ty = info
        .type_char
        .map_or_else(|| format!("{:#04x}", d.ty), |c| format!("'{c}'"));
    let mut text = format!(
        "{}: {}({ty}, {}, {} bytes)\n",
        ioctl_abi::listing::hex32(info.value.0),
        d.dir.macro_name(),
        d.nr,
        d.size
    );
    match (&info.ioctl, info.error) {
        (Some(r), _) => {
            text.push_str(&format!(
                "{} — argument {} ({} bytes copied), since {}{}\n",
                r.name,
                r.arg,
                r.struct_size,
                r.since.label(),
                if r.attach_gated { ", attach-gated" } else { "" }
            ));
            for a in &r.aliases {
                text.push_str(&format!("also known as {} ({})\n", a.name, a.source));
            }
        }
        (None, Some(e)) => {
            let why = if e == "EINVAL" {
                "a size-dispatched family with no variant of this size"
            } else {
                "unknown number"
            };
            text.push_str(&format!("not a supported ioctl: {e} ({why})\n"));
        }
        (None, None) => {}
    }
    text
}
