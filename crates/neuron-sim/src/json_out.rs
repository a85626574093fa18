//! The JSON outputs (docs/user-guide.md §JSON outputs): every document an
//! option `--json` (or a `.json` output file) writes is one of the kinds
//! below, carries `schema_version`, and has a JSON Schema in
//! `docs/schemas/KIND.schema.json` generated from these types (`neuron-sim
//! schema`, `cargo xtask schemas`).
//!
//! Numbers shown in hex have one form everywhere (`soc_map::HEX_PATTERN`).

use std::borrow::Cow;
use std::path::Path;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use soc_map::{Hex, Hex32};

use crate::{Failure, bad_input, to_json};

/// The version of every JSON output's layout. It changes when a field is
/// removed or renamed, or its type or meaning changes; fields may be added
/// without a change (a program ignores the keys it does not know).
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// `schema_version`: always [`SCHEMA_VERSION`]; its schema is that constant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchemaVersion;

impl Serialize for SchemaVersion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(SCHEMA_VERSION)
    }
}

impl JsonSchema for SchemaVersion {
    fn schema_name() -> Cow<'static, str> {
        "SchemaVersion".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "The layout's version (docs/user-guide.md §JSON outputs): a program checks it before reading the rest.",
            "type": "integer",
            "const": SCHEMA_VERSION,
        })
    }
}

/// A JSON output: `schema_version`, then the body's fields.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Doc<T> {
    /// The layout's version.
    pub(crate) schema_version: SchemaVersion,
    /// The output itself.
    #[serde(flatten)]
    pub(crate) body: T,
}

impl<T> Doc<T> {
    pub(crate) fn new(body: T) -> Self {
        Doc {
            schema_version: SchemaVersion,
            body,
        }
    }
}

/// Prints `body` as the JSON document of its kind.
pub(crate) fn print<T: Serialize>(body: T) -> Result<(), Failure> {
    outln!("{}", to_json(&Doc::new(body))?);
    Ok(())
}

/// `body` as one line of JSON (the step protocol writes a message a line).
pub(crate) fn line<T: Serialize>(body: &T) -> String {
    serde_json::to_string(body).unwrap_or_else(|e| {
        format!(
            r#"{{"schema_version":{SCHEMA_VERSION},"type":"error","message":"cannot encode: {e}"}}"#
        )
    })
}

// ------------------------------------------------------------- the bodies

/// `csr list --json`: the CSR blocks.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CsrBlocks {
    /// Every block, by name.
    pub(crate) blocks: Vec<CsrBlock>,
}

/// One CSR block.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CsrBlock {
    /// Block name (`udma_m2s_q`).
    pub(crate) name: String,
    /// What the block is.
    pub(crate) description: String,
}

/// `csr list BLOCK --json`: a block's registers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CsrRegisters {
    /// Block name.
    pub(crate) block: String,
    /// What the block is.
    pub(crate) description: String,
    /// Registers in offset order.
    pub(crate) registers: Vec<csr::listing::RegisterListing>,
}

/// `csr decode BLOCK REGISTER VALUE --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CsrDecode {
    /// Block name.
    pub(crate) block: String,
    /// Register name (`SEM_INC[3]`).
    pub(crate) register: String,
    /// The register's offset in the block.
    pub(crate) offset: Hex,
    /// The value decoded.
    pub(crate) value: Hex32,
    /// Its fields, low bit first.
    pub(crate) fields: Vec<FieldValue>,
}

/// One field of a decoded register.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct FieldValue {
    /// Field name.
    pub(crate) name: String,
    /// The field's value (shifted down to bit 0).
    pub(crate) value: Hex,
}

/// `map --json`: the compact region table.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct MapTable {
    /// One row per map node, arrays collapsed.
    pub(crate) regions: Vec<soc_map::table::TableRow>,
}

/// `map --expand --json`: every concrete region.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct MapExpanded {
    /// Every region, in address order.
    pub(crate) regions: Vec<soc_map::table::ExpandedRow>,
}

/// `timing --json`: the parameters, as a complete timing file.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Timing {
    /// What the file is.
    pub(crate) description: String,
    /// Every parameter by name: value, unit and source.
    pub(crate) parameters: std::collections::BTreeMap<String, sim_core::TimingParam>,
}

/// `ioctl list --json`: every supported ioctl.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct IoctlList {
    /// In table order.
    pub(crate) ioctls: Vec<ioctl_abi::listing::IoctlListing>,
}

/// How fast the simulator ran (host wall clock): differs from run to run,
/// so it sits in its own block, which `--no-host-timing` leaves out.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct HostTiming {
    /// Wall-clock seconds of the run.
    pub(crate) host_seconds: f64,
    /// Simulated cycles per host second.
    pub(crate) cycles_per_host_second: f64,
    /// Descriptors per host second.
    pub(crate) descriptors_per_host_second: f64,
    /// Simulator events (engine-internal events and firmware runs).
    pub(crate) event_count: u64,
    /// Events per host second.
    pub(crate) events_per_host_second: f64,
    /// Host time / simulated time.
    pub(crate) slowdown: f64,
}

impl HostTiming {
    pub(crate) fn measure(
        elapsed: std::time::Duration,
        report: &soc::exec::RunReport,
        events: u64,
    ) -> Self {
        let host = elapsed.as_secs_f64().max(1e-9);
        let sim_s = report.summary.sim_ns * 1e-9;
        HostTiming {
            host_seconds: host,
            cycles_per_host_second: report.summary.cycles as f64 / host,
            descriptors_per_host_second: report.summary.descriptors as f64 / host,
            event_count: events,
            events_per_host_second: events as f64 / host,
            slowdown: if sim_s > 0.0 { host / sim_s } else { 0.0 },
        }
    }
}

/// `run --json`: the run report. Everything but `host_timing` is the
/// simulated result, the same bytes on every run of the same trace.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Run<'a> {
    /// The report, the host runtime's side, why the run stopped early:
    /// the document every front end gives (the Python package's too).
    #[serde(flatten)]
    pub(crate) run: host_exec::RunDocument<'a>,
    /// Host wall-clock figures; absent with `--no-host-timing`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) host_timing: Option<HostTiming>,
    /// The race detector's findings (`--detect-races`, docs/races.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) race: Option<soc::RaceSummary>,
}

/// `run --csr-snapshot FILE.json`: every register that differs from reset.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CsrSnapshot<'a> {
    /// The blocks, by address.
    #[serde(flatten)]
    pub(crate) snapshot: &'a soc::CsrSnapshot,
}

// ------------------------------------------------------------- the kinds

/// One kind of JSON output and its schema.
pub(crate) struct Kind {
    /// File stem in `docs/schemas/` and `neuron-sim schema KIND`.
    pub(crate) name: &'static str,
    /// The command that writes it.
    pub(crate) command: &'static str,
    schema: fn() -> Schema,
}

fn schema_of<T: JsonSchema>() -> Schema {
    // What the program writes: a field it leaves out when empty is not
    // required.
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Doc<T>>()
}

/// Every kind, by name.
pub(crate) const KINDS: &[Kind] = &[
    Kind {
        name: "calibrate",
        command: "neuron-sim calibrate --json",
        schema: schema_of::<sweep::Calibration>,
    },
    Kind {
        name: "csr-blocks",
        command: "neuron-sim csr list --json",
        schema: schema_of::<CsrBlocks>,
    },
    Kind {
        name: "csr-decode",
        command: "neuron-sim csr decode BLOCK REGISTER VALUE --json",
        schema: schema_of::<CsrDecode>,
    },
    Kind {
        name: "csr-registers",
        command: "neuron-sim csr list BLOCK --json",
        schema: schema_of::<CsrRegisters>,
    },
    Kind {
        name: "csr-snapshot",
        command: "neuron-sim run --csr-snapshot FILE.json",
        schema: schema_of::<CsrSnapshot<'static>>,
    },
    Kind {
        name: "decode-desc",
        command: "neuron-sim decode --desc HEX --json",
        schema: schema_of::<dma_abi::DescriptorDecode>,
    },
    Kind {
        name: "decode-word",
        command: "neuron-sim decode --word HEX --json",
        schema: schema_of::<dma_abi::inst::InstDecode>,
    },
    Kind {
        name: "ioctl-decode",
        command: "neuron-sim ioctl decode VALUE --json",
        schema: schema_of::<ioctl_abi::listing::NumberInfo>,
    },
    Kind {
        name: "ioctl-list",
        command: "neuron-sim ioctl list --json",
        schema: schema_of::<IoctlList>,
    },
    Kind {
        name: "ioctl-replay",
        command: "neuron-sim ioctl replay FILE --json",
        schema: schema_of::<ioctl_bus::ReplayReport>,
    },
    Kind {
        name: "map-address",
        command: "neuron-sim map ADDR --json",
        schema: schema_of::<soc::AddressInfo>,
    },
    Kind {
        name: "map-expanded",
        command: "neuron-sim map --expand --json",
        schema: schema_of::<MapExpanded>,
    },
    Kind {
        name: "map-table",
        command: "neuron-sim map --json",
        schema: schema_of::<MapTable>,
    },
    Kind {
        name: "profile",
        command: "neuron-sim run TRACE --profile FILE",
        schema: schema_of::<timeline::Profile>,
    },
    Kind {
        name: "race",
        command: "neuron-sim race TRACE --json",
        schema: schema_of::<sweep::seeds::RaceJson>,
    },
    Kind {
        name: "run",
        command: "neuron-sim run TRACE --json",
        schema: schema_of::<Run<'static>>,
    },
    Kind {
        name: "step",
        command: "neuron-sim step TRACE --json",
        schema: schema_of::<debugger::protocol::Message>,
    },
    Kind {
        name: "sweep",
        command: "neuron-sim sweep TRACE --json",
        schema: schema_of::<sweep::SweepJson>,
    },
    Kind {
        name: "timing",
        command: "neuron-sim timing --json",
        schema: schema_of::<Timing>,
    },
];

impl Kind {
    /// The schema, titled with the command, as `docs/schemas/` holds it.
    pub(crate) fn schema(&self) -> Schema {
        let mut s = (self.schema)();
        s.insert(
            "title".into(),
            format!("{} (schema_version {SCHEMA_VERSION})", self.command).into(),
        );
        s.insert(
            "description".into(),
            format!(
                "What `{}` prints (docs/user-guide.md §JSON outputs): `schema_version`, then the fields below. Generated from the Rust types by `cargo xtask schemas`; do not edit.",
                self.command
            )
            .into(),
        );
        s
    }

    /// The schema's file text: pretty JSON and a final newline.
    pub(crate) fn text(&self) -> Result<String, Failure> {
        Ok(to_json(&self.schema())? + "\n")
    }
}

/// `neuron-sim schema [KIND] [--out-dir DIR]`.
pub(crate) fn cmd_schema(kind: Option<&str>, out_dir: Option<&Path>) -> Result<u8, Failure> {
    if let Some(dir) = out_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| bad_input(format!("cannot create {}: {e}", dir.display())))?;
        for k in KINDS.iter().filter(|k| kind.is_none_or(|n| n == k.name)) {
            let p = dir.join(format!("{}.schema.json", k.name));
            std::fs::write(&p, k.text()?)
                .map_err(|e| bad_input(format!("cannot write {}: {e}", p.display())))?;
        }
    }
    match kind {
        None if out_dir.is_none() => {
            for k in KINDS {
                outln!("{:<14} {}", k.name, k.command);
            }
        }
        None => {}
        Some(name) => {
            let Some(k) = KINDS.iter().find(|k| k.name == name) else {
                let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
                return Err(bad_input(format!(
                    "no JSON output `{name}` (outputs: {}){}",
                    names.join(", "),
                    trace_format::closest_name(name, names.iter().copied())
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default()
                )));
            };
            if out_dir.is_none() {
                out!("{}", k.text()?);
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_schema_with_the_version() {
        for k in KINDS {
            let s = serde_json::to_value(k.schema()).unwrap();
            assert_eq!(
                s["properties"]["schema_version"]["$ref"], "#/$defs/SchemaVersion",
                "{}",
                k.name
            );
            assert_eq!(s["$defs"]["SchemaVersion"]["const"], SCHEMA_VERSION);
            assert!(
                s["required"]
                    .as_array()
                    .unwrap()
                    .contains(&"schema_version".into())
            );
        }
        let mut names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len());
    }

    #[test]
    fn a_doc_starts_with_the_version() {
        let text = serde_json::to_string(&Doc::new(FieldValue {
            name: "EN".into(),
            value: Hex(1),
        }))
        .unwrap();
        assert_eq!(text, r#"{"schema_version":1,"name":"EN","value":"0x1"}"#);
    }
}
