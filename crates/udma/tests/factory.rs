//! `EngineFactory` builds the same unit at reset as `Engine::new`, for
//! every kind of unit (SENG below 128 with the ring-id error masked, H2T
//! from 128 with it armed), and the copies run alike.
#![allow(clippy::unwrap_used)]

use sim_core::TimingConfig;
use udma::{Engine, EngineFactory, UnitMaps};

#[test]
fn a_factory_unit_is_the_unit_engine_new_builds() {
    let timing = TimingConfig::default_config().unwrap();
    let maps = UnitMaps::builtin().unwrap();
    let factory = EngineFactory::new(maps, &timing);
    for id in [0u16, 1, 17, 127, 128, 129, 131] {
        let built = Engine::new(id, maps, &timing);
        let copied = factory.engine(id);
        assert_eq!(copied.id(), id);
        // Every field, registers and their reset images included.
        assert_eq!(format!("{copied:?}"), format!("{built:?}"), "unit {id}");
    }
    // The two kinds differ beyond their ids (the SENG masks), so a copy of
    // the wrong kind would be caught above.
    let without_id = |e: Engine| {
        let id = e.id();
        let text = format!("{e:?}");
        let field = format!(" id: {id},");
        assert!(text.contains(&field), "{text}");
        text.replacen(&field, "", 1)
    };
    assert_ne!(
        without_id(factory.engine(5)),
        without_id(factory.engine(130))
    );
    assert_eq!(
        without_id(factory.engine(5)),
        without_id(Engine::new(6, maps, &timing))
    );
}
