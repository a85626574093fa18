//! A device from optional map and timing texts, and an address written as
//! text: what every front end (the CLI's `--soc-map`/`--csr-maps`/
//! `--timing`, the Python package's `Device(...)`) needs before it runs
//! anything (docs/address-map.md, docs/csr-map-format.md, docs/timing.md).

use crate::device::Device;
use crate::resolve::{Resolved, resolve};

/// One input text and the name its messages give it (a file path).
#[derive(Clone, Debug)]
pub struct Source {
    /// The text.
    pub text: String,
    /// Its name in messages.
    pub name: String,
}

/// What a device is built from; `None`/empty: the built-in maps and timing.
#[derive(Clone, Debug, Default)]
pub struct DeviceSources {
    /// A timing file: only the parameters it changes (docs/timing.md).
    pub timing: Option<Source>,
    /// An address map replacing the built-in one (docs/address-map.md).
    pub soc_map: Option<Source>,
    /// CSR maps added over the built-in ones, each replacing the block of
    /// its name (docs/csr-map-format.md).
    pub csr_maps: Vec<Source>,
}

/// Builds a device from `sources`.
///
/// # Errors
///
/// A message naming the source that does not parse or validate.
pub fn device_from(sources: &DeviceSources) -> Result<Device, String> {
    let catalog = catalog_from(&sources.csr_maps)?;
    let timing = match &sources.timing {
        None => sim_core::TimingConfig::default_config().map_err(|e| e.to_string())?,
        Some(s) => sim_core::TimingConfig::from_json_over_defaults(&s.text, &s.name)
            .map_err(|e| format!("{}: {e}", s.name))?,
    };
    let map = match &sources.soc_map {
        None => soc_map::trn2(),
        Some(s) => soc_map::SocMap::from_json(&s.text, &s.name),
    }
    .map_err(|e| e.to_string())?;
    Device::with_timing(map, catalog, timing).map_err(|e| e.to_string())
}

/// The CSR map files of a directory (`--csr-maps DIR`): every `*.json`
/// but `soc-map.json`, in name order.
///
/// # Errors
///
/// A message naming the directory that cannot be read.
pub fn csr_map_paths_in(dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("json"))
                && p.file_name()
                    .is_some_and(|n| !n.eq_ignore_ascii_case("soc-map.json"))
        })
        .collect();
    paths.sort();
    Ok(paths)
}

/// The CSR maps of a directory ([`csr_map_paths_in`]), read.
///
/// # Errors
///
/// A message naming the directory or file that cannot be read.
pub fn csr_map_sources_in(dir: &std::path::Path) -> Result<Vec<Source>, String> {
    csr_map_paths_in(dir)?
        .into_iter()
        .map(|p| {
            let text = crate::input::read_text_file(&p, crate::input::InputKind::CsrMap)
                .map_err(|e| format!("cannot read CSR map {}: {e}", p.display()))?;
            Ok(Source {
                text,
                name: p.display().to_string(),
            })
        })
        .collect()
}

/// The built-in CSR catalog with `csr_maps` over it.
///
/// # Errors
///
/// A message naming the map that does not parse or validate.
pub fn catalog_from(csr_maps: &[Source]) -> Result<&'static csr::Catalog, String> {
    if csr_maps.is_empty() {
        return csr::catalog().map_err(|e| e.to_string());
    }
    let mut catalog = csr::Catalog::builtin().map_err(|e| e.to_string())?;
    // A block given twice would leave one file's registers for the other's
    // at random (the directory's order): bad input naming both.
    let mut given: std::collections::BTreeMap<String, &str> = std::collections::BTreeMap::new();
    for s in csr_maps {
        let map = csr::CsrMap::from_json(&s.text, &s.name).map_err(|e| e.to_string())?;
        if let Some(other) = given.insert(map.block().to_string(), &s.name) {
            return Err(format!(
                "{}: CSR block `{}` is also defined by {other}: one file per block",
                s.name,
                map.block()
            ));
        }
        catalog.insert(map);
    }
    // A device borrows its catalog for its lifetime: one per process.
    Ok(Box::leak(Box::new(catalog)))
}

/// Resolves an address written as in a trace (`hbm0+0x1000`,
/// `tpb0.sbuf[p5]`, `eng0.m2s.q0.q_cfg`, `0x2000000000`;
/// docs/trace-format.md §2).
///
/// # Errors
///
/// The parse or resolution message, naming the component that is wrong.
pub fn resolve_text(device: &Device, text: &str) -> Result<Resolved, String> {
    let expr = trace_format::parse_addr(text, "<address>").map_err(|e| e.message)?;
    resolve(device, &expr).map_err(|e| format!("`{}`: {}", text.trim(), e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_sources_give_the_trn2_device() {
        let dev = device_from(&DeviceSources::default()).expect("built-in maps");
        let hbm = resolve_text(&dev, "hbm0+0x1000").expect("resolves");
        let base = resolve_text(&dev, "hbm0").expect("resolves").addr;
        assert_eq!(hbm.addr, base + 0x1000);
        assert_eq!(hbm.register, None);
    }

    #[test]
    fn registers_resolve_with_their_name_and_bad_names_say_so() {
        let dev = device_from(&DeviceSources::default()).expect("built-in maps");
        let r = resolve_text(&dev, "eng0.m2s.q0.q_cfg").expect("a register");
        assert!(r.register.is_some());
        let e = resolve_text(&dev, "hbm9").expect_err("no hbm9");
        assert!(e.contains("hbm9"), "{e}");
    }

    #[test]
    fn a_bad_timing_text_names_its_source() {
        let sources = DeviceSources {
            timing: Some(Source {
                text: "{\"clock_ghz\": -1}".into(),
                name: "t.json".into(),
            }),
            ..DeviceSources::default()
        };
        let e = device_from(&sources).expect_err("bad clock");
        assert!(e.contains("t.json"), "{e}");
    }
}
