//! `neuron-sim ioctl`: the driver's ioctl ABI as data (`ioctl-abi`).

use clap::Subcommand;
use soc_map::Hex;

use crate::{Failure, bad_input, to_json};

#[derive(Debug, Subcommand)]
pub(crate) enum IoctlCmd {
    /// List every supported ioctl: number, direction, nr, sizes, names.
    List {
        /// Print JSON (an array of {name, dir, nr, size, value, …}).
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

pub(crate) fn run(cmd: IoctlCmd) -> Result<u8, Failure> {
    match cmd {
        IoctlCmd::List { json } => {
            let rows = ioctl_abi::list();
            if json {
                outln!("{}", to_json(&rows)?);
            } else {
                out!("{}", ioctl_abi::listing::render_text(&rows));
            }
            Ok(0)
        }
        IoctlCmd::Decode { value, json } => {
            let value = u32::try_from(value.0)
                .map_err(|_| bad_input(format!("{value} does not fit 32 bits")))?;
            let info = ioctl_abi::listing::describe(value);
            if json {
                outln!("{}", to_json(&info)?);
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
        info.value,
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
