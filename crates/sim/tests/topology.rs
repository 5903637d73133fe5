//! Topology as data: a two-socket, four-core server (the Intel 5000P's shape: two front-side
//! buses, root ports with INTXSWZCTRL, ESI to the south bridge with its own PCIe port, PIRQ
//! router, IO-APIC and 8259 pair) read from a platform file's tables, routing an MSI, INTx
//! through a swizzling root port, and port I/O by address decode and message type.

use irqlab_sim::hw::pcie::Dir;
use irqlab_sim::topology::route::{Path, Request};
use irqlab_sim::topology::{Topology, TopologyError};

/// Bensley-like: sockets on FSB0 (APIC IDs 0, 1) and FSB1 (2, 3); a dual-port NIC (functions 0
/// and 1 on INTA and INTB) below root port D4, whose INTXSWZCTRL is 2; an on-board NIC below
/// the south bridge's own root port; PIRQA-D on IO-APIC pins 16-19 (coreboot's X7DB8 table).
const BENSLEY: &str = r#"
[part.cpu0]
kind = "core"
apic_id = 0
[part.cpu1]
kind = "core"
apic_id = 1
[part.cpu2]
kind = "core"
apic_id = 2
[part.cpu3]
kind = "core"
apic_id = 3
[part.mch]
kind = "host-bridge"
requester_id = "000:00:0"
[part.dram]
kind = "memory"
base = 0
size = 0x80000000
[part.port2]
kind = "bridge"
dev = 2
link_pipeline_ns = 100.0
[part.port4]
kind = "bridge"
dev = 4
link_pipeline_ns = 100.0
intx_swizzle = 2
[part.nic0]
kind = "endpoint"
bdf = "007:00:0"
intx_pin = "A"
mem = [[0xD8000000, 0x20000]]
io = [[0x3000, 0x301F]]
[part.nic1]
kind = "endpoint"
bdf = "007:00:1"
intx_pin = "B"
mem = [[0xD8020000, 0x20000]]
[part.esb]
kind = "hub"
[part.router]
kind = "pirq-router"
[part.pics]
kind = "function"
io = [[0x20, 0x21], [0xA0, 0xA1]]
[part.ioapic]
kind = "function"
mem = [[0xFEC00000, 0x1000]]
[part.esb-port0]
kind = "bridge"
dev = 0
link_pipeline_ns = 100.0
[part.onboard]
kind = "endpoint"
bdf = "005:00:0"
intx_pin = "A"
mem = [[0xD0000000, 0x20000]]

[link.fsb0]
kind = "shared-bus"
up = "mch"
down = ["cpu0", "cpu1"]
clock_hz = 266.666e6
request_phase_clocks = 2
transaction_clocks = 6
[link.fsb1]
kind = "shared-bus"
up = "mch"
down = ["cpu2", "cpu3"]
clock_hz = 266.666e6
request_phase_clocks = 2
transaction_clocks = 6
[link.mem]
kind = "delay"
up = "mch"
down = ["dram"]
ns = 60.0
[link.mch-ports]
kind = "delay"
up = "mch"
down = ["port2", "port4"]
ns = 0.0
[link.pcie4]
kind = "serial"
up = "port4"
down = ["nic0"]
generation = 1
width = 4
pipeline_ns = 60.0
[link.pcie4-fn1]
kind = "delay"
up = "nic0"
down = ["nic1"]
ns = 0.0
[link.esi]
kind = "serial"
up = "mch"
down = ["esb"]
generation = 1
width = 4
pipeline_ns = 60.0
[link.esb-fabric]
kind = "delay"
up = "esb"
down = ["router", "pics", "ioapic", "esb-port0"]
ns = 20.0
[link.esb-pcie0]
kind = "serial"
up = "esb-port0"
down = ["onboard"]
generation = 1
width = 1
pipeline_ns = 100.0

[[wire]]
from = "router"
from_line = 0
to = "ioapic"
to_line = 16
[[wire]]
from = "router"
from_line = 1
to = "ioapic"
to_line = 17
[[wire]]
from = "router"
from_line = 2
to = "ioapic"
to_line = 18
[[wire]]
from = "router"
from_line = 3
to = "ioapic"
to_line = 19
"#;

fn names(t: &Topology, p: &Path) -> Vec<String> {
    p.steps
        .iter()
        .map(|&(l, d)| {
            format!(
                "{}{}",
                t.links[usize::from(l)].name,
                if d == Dir::Up { "^" } else { "v" }
            )
        })
        .collect()
}

fn id(t: &Topology, name: &str) -> u16 {
    t.part(name).unwrap_or_else(|| panic!("no part {name}"))
}

#[test]
fn an_msi_goes_up_the_root_port_and_down_the_front_side_bus_of_its_core() {
    let t = Topology::from_toml(BENSLEY).unwrap();
    // The NIC's MSI to APIC ID 2: the interrupt window decodes to core 2, on socket 1's bus.
    let p = t.route(id(&t, "nic0"), Request::Mem(0xFEE0_2000)).unwrap();
    assert_eq!(p.dest, id(&t, "cpu2"));
    assert_eq!(names(&t, &p), ["pcie4^", "mch-ports^", "fsb1v"]);
    // A DMA write goes to memory and stops at the host bridge's side.
    let p = t.route(id(&t, "nic1"), Request::Mem(0x1000_0000)).unwrap();
    assert_eq!(p.dest, id(&t, "dram"));
    assert_eq!(
        names(&t, &p),
        ["pcie4-fn1^", "pcie4^", "mch-ports^", "memv"]
    );
    // An IPI from core 0 to core 1 is one transaction on their bus; to core 3 it crosses both.
    let p = t.route(id(&t, "cpu0"), Request::Mem(0xFEE0_1000)).unwrap();
    assert_eq!(names(&t, &p), ["fsb0v"]);
    let p = t.route(id(&t, "cpu0"), Request::Mem(0xFEE0_3000)).unwrap();
    assert_eq!(names(&t, &p), ["fsb0^", "fsb1v"]);
}

#[test]
fn intx_is_swizzled_by_the_root_port_and_reaches_the_ioapic_pin_of_its_pirq() {
    let t = Topology::from_toml(BENSLEY).unwrap();
    let ioapic = id(&t, "ioapic");
    let pin_of = |p: &Path| t.wired(p.dest, p.line.unwrap());
    // Function 1 signals INTB; device 0 below the port keeps it B; INTXSWZCTRL = 2 turns it
    // into INTD: PIRQD, IO-APIC pin 19. The message crosses the ESI to the router.
    let p = t.route(id(&t, "nic1"), Request::Intx).unwrap();
    assert_eq!(p.dest, id(&t, "router"));
    assert_eq!(p.line, Some(3));
    assert_eq!(pin_of(&p), [(ioapic, 19)]);
    assert_eq!(
        names(&t, &p),
        ["pcie4-fn1^", "pcie4^", "mch-ports^", "esiv", "esb-fabricv"]
    );
    // Function 0: INTA -> INTC -> pin 18.
    let p = t.route(id(&t, "nic0"), Request::Intx).unwrap();
    assert_eq!(pin_of(&p), [(ioapic, 18)]);
    // The BIOS that leaves INTXSWZCTRL at 0: INTA and INTB on pins 16 and 17 (seed 001 Table 3).
    let plain = Topology::from_toml(&BENSLEY.replace("intx_swizzle = 2\n", "")).unwrap();
    for (nic, pin) in [("nic0", 16), ("nic1", 17)] {
        let p = plain.route(id(&plain, nic), Request::Intx).unwrap();
        assert_eq!(
            plain.wired(p.dest, p.line.unwrap()),
            [(ioapic, pin)],
            "{nic}"
        );
    }
    // Behind the south bridge's own root port, INTx stays in the south bridge: no ESI crossing.
    let p = t.route(id(&t, "onboard"), Request::Intx).unwrap();
    assert_eq!(names(&t, &p), ["esb-pcie0^", "esb-fabricv"]);
    assert_eq!(p.line, Some(0));
}

#[test]
fn port_io_is_decoded_on_the_south_bridge_or_below_a_root_port() {
    let t = Topology::from_toml(BENSLEY).unwrap();
    // Core 3 reads the master 8259's IRR: its bus, the MCH, the ESI, the hub.
    let p = t.route(id(&t, "cpu3"), Request::Io(0x20)).unwrap();
    assert_eq!(p.dest, id(&t, "pics"));
    assert_eq!(names(&t, &p), ["fsb1^", "esiv", "esb-fabricv"]);
    // An I/O BAR of the NIC: down the root port.
    let p = t.route(id(&t, "cpu0"), Request::Io(0x3004)).unwrap();
    assert_eq!(p.dest, id(&t, "nic0"));
    assert_eq!(names(&t, &p), ["fsb0^", "mch-portsv", "pcie4v"]);
    // The IO-APIC's registers are memory on the south bridge.
    let p = t.route(id(&t, "cpu1"), Request::Mem(0xFEC0_0010)).unwrap();
    assert_eq!(p.dest, id(&t, "ioapic"));
    // Nobody decodes port 0x3F8 on this board.
    let e = t.route(id(&t, "cpu0"), Request::Io(0x3F8)).unwrap_err();
    assert!(e.to_string().contains("I/O port 0x3f8"), "{e}");
    let e = t
        .route(id(&t, "nic0"), Request::Mem(0xFEE0_9000))
        .unwrap_err();
    assert!(e.to_string().contains("APIC ID 9"), "{e}");
}

#[test]
fn a_topology_that_cannot_be_is_refused_by_name() {
    let err = |text: &str| Topology::from_toml(text).unwrap_err();
    let e = err(&BENSLEY.replace("down = [\"cpu2\", \"cpu3\"]", "down = [\"cpu2\", \"cpu9\"]"));
    assert!(
        matches!(&e, TopologyError::Invalid { key, what, message }
        if key == "link.fsb1.down" && what == "link 'fsb1'" && message.contains("cpu9")),
        "{e}"
    );
    let e = err(&BENSLEY.replace(
        "down = [\"cpu0\", \"cpu1\"]",
        "down = [\"cpu0\", \"cpu1\", \"cpu2\"]",
    ));
    assert!(e.to_string().contains("two upstream links"), "{e}");
    let e = err(&BENSLEY.replace("intx_swizzle = 2", "intx_swizzle = 4"));
    assert!(e.to_string().contains("INTXSWZCTRL"), "{e}");
    let e = err(&BENSLEY.replace("down = [\"onboard\"]", "down = [\"onboard\", \"nic0\"]"));
    assert!(e.to_string().contains("nic0"), "{e}");
    // A part hanging from nothing.
    let e = err(&format!("{BENSLEY}\n[part.stray]\nkind = \"hub\"\n"));
    assert!(e.to_string().contains("stray"), "{e}");
}

#[test]
fn a_conventional_pci_device_signals_on_a_wire_the_board_routes() {
    // A PCI slot on the south bridge's PCI bus: its INTA# is a trace on the board to PIRQC#
    // (the $PIR table says which), not a message.
    let text = format!(
        "{BENSLEY}
[part.scsi]
kind = \"endpoint\"
bdf = \"004:02:0\"
intx_pin = \"A\"
[link.pci]
kind = \"shared-bus\"
up = \"esb\"
down = [\"scsi\"]
clock_hz = 33.333e6
request_phase_clocks = 1
transaction_clocks = 4
[[wire]]
from = \"scsi\"
from_line = 0
to = \"router\"
to_line = 2
"
    );
    let t = Topology::from_toml(&text).unwrap();
    let p = t.route(id(&t, "scsi"), Request::Intx).unwrap();
    assert!(p.steps.is_empty());
    assert_eq!((p.dest, p.line), (id(&t, "router"), Some(2)));
    assert_eq!(t.wired(p.dest, 2), [(id(&t, "ioapic"), 18)]);
    // Without the trace it is refused, naming the device.
    let cut = text.replace("from = \"scsi\"", "from = \"onboard\"");
    let t = Topology::from_toml(&cut).unwrap();
    let e = t.route(id(&t, "scsi"), Request::Intx).unwrap_err();
    assert!(
        e.to_string().contains("scsi") && e.to_string().contains("[[wire]]"),
        "{e}"
    );
}

#[test]
fn parts_with_keys_of_another_kind_or_one_apic_id_twice_are_refused() {
    let err = |text: &str| Topology::from_toml(text).unwrap_err().to_string();
    let e = err(&BENSLEY.replace("[part.dram]\n", "[part.dram]\ndev = 3\n"));
    assert!(
        e.contains("a memory has no `dev`") && e.contains("`read_ns`"),
        "{e}"
    );
    let e = err(&BENSLEY.replace("apic_id = 3", "apic_id = 2"));
    assert!(e.contains("APIC ID 2 is another core's"), "{e}");
    let e = err(&BENSLEY.replace("apic_id = 3", "apic_id = 255"));
    assert!(e.contains("broadcast ID"), "{e}");
    let e = err(&BENSLEY.replace("[part.esb]\nkind = \"hub\"\n", "[part.esb]\n"));
    assert!(e.contains("part 'esb'") && e.contains("no `kind`"), "{e}");
    let e = err(&BENSLEY.replace("kind = \"hub\"", "kind = \"south-bridge\""));
    assert!(
        e.contains("south-bridge") && e.contains("pirq-router"),
        "{e}"
    );
    let e = err(&BENSLEY.replace("dev = 4\n", "dev = 40\n"));
    assert!(e.contains("dev = 40") && e.contains("0-31"), "{e}");
    let e = err(&BENSLEY.replacen("link_pipeline_ns = 100.0\n", "", 1));
    assert!(e.contains("needs `link_pipeline_ns`"), "{e}");
}

#[test]
fn wires_roots_and_strays_are_refused_where_they_are() {
    let err = |text: &str| Topology::from_toml(text).unwrap_err();
    let key = |e: &TopologyError| match e {
        TopologyError::Invalid { key, .. } => key.clone(),
        other => panic!("{other}"),
    };
    // Wires leave the router or a device's pin and end at a controller or the router.
    let e = err(&BENSLEY.replacen("from = \"router\"", "from = \"cpu0\"", 1));
    assert_eq!(key(&e), "wire.0.from");
    assert!(e.to_string().contains("drives no interrupt line"), "{e}");
    let e = err(&BENSLEY.replacen("to = \"ioapic\"", "to = \"dram\"", 1));
    assert_eq!(key(&e), "wire.0.to");
    let e = err(&BENSLEY.replacen("from_line = 3", "from_line = 9", 1));
    assert_eq!(key(&e), "wire.3.from_line");
    assert!(e.to_string().contains("lines 0 to 7"), "{e}");
    let e = err(&BENSLEY.replacen("to = \"ioapic\"", "to = \"nosuch\"", 1));
    assert_eq!(key(&e), "wire.0.to");
    // A part on no link is named itself; the host bridge is not among the strays.
    let e = err(&format!("{BENSLEY}\n[part.stray]\nkind = \"hub\"\n"));
    assert_eq!(key(&e), "part.stray");
    assert!(!e.to_string().contains("mch"), "{e}");
    let e = err(&format!(
        "{BENSLEY}\n[part.mch2]\nkind = \"host-bridge\"\nrequester_id = \"000:00:0\"\n"
    ));
    assert_eq!(key(&e), "part.mch2");
    assert!(e.to_string().contains("second host bridge"), "{e}");
}

/// The shipped platforms, assembled with their scenario's devices, route every transaction the
/// machine sends along the hops the machine had before the topology was data (seed 000's
/// Figure 1: FSB, MCH, a root port's link; DMI and the ICH's backbone to the interrupt block).
#[test]
fn the_shipped_platforms_route_as_the_fixed_table_did() {
    use irqlab_sim::machine::fabric::{Endpoint, Fabric};
    use irqlab_sim::scenario::Scenario;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (scenario, bus, core, dmi, hub) in [
        (
            "experiments/seed000/ws.toml",
            "fsb",
            "mch-core",
            "dmi",
            "ich-backbone",
        ),
        (
            "experiments/seed000/soc.toml",
            "fsb",
            "imch-core",
            "dmi",
            "iich-backbone",
        ),
        (
            "experiments/seed002/fpga.toml",
            "ring",
            "sa-core",
            "dmi",
            "pch-fabric",
        ),
    ] {
        let s = Scenario::load(root.join(scenario), &[]).unwrap();
        let (t, ends) = s.topology().unwrap();
        let fabric = Fabric::new(&t, &ends).unwrap();
        let link = format!("{}-link", s.file.device[0].name());
        let hops = |from, to| -> Vec<String> {
            let r = fabric.route(from, to);
            (0..fabric.route_len(r))
                .map(|i| t.links[usize::from(fabric.hop(r, i).link)].name.clone())
                .collect()
        };
        let (cpu, dev) = (Endpoint::Core(0), Endpoint::Device(0));
        assert_eq!(hops(cpu, dev), [bus, core, &link], "{scenario}");
        assert_eq!(hops(dev, cpu), [&link, core, bus], "{scenario}");
        assert_eq!(
            hops(dev, Endpoint::Ich),
            [&link, core, dmi, hub],
            "{scenario}"
        );
        assert_eq!(
            hops(cpu, Endpoint::Ich),
            [bus, core, dmi, hub],
            "{scenario}"
        );
        assert_eq!(
            hops(Endpoint::Ich, cpu),
            [hub, dmi, core, bus],
            "{scenario}"
        );
        assert_eq!(hops(dev, Endpoint::Memory), [&link, core], "{scenario}");
        assert_eq!(hops(Endpoint::Memory, dev), [core, &link], "{scenario}");
        assert_eq!(
            hops(cpu, cpu),
            [bus],
            "{scenario}: an IPI is one bus transaction"
        );
        assert_eq!(fabric.hop(fabric.route(dev, cpu), 0).dir, Dir::Up);
        assert_eq!(fabric.hop(fabric.route(cpu, dev), 2).dir, Dir::Down);
    }
}

/// Every shipped platform, from the 1998 PC to the 2017 desktop, is an instance of the one
/// schema: it reads as a `PlatformFile`, its parts and links build a topology, and a core's port
/// I/O to the 8259 pair finds the part that decodes it.
#[test]
fn every_shipped_platform_is_one_schema() {
    use irqlab_sim::scenario::PlatformFile;
    use irqlab_sim::topology::route::Request;
    use irqlab_sim::topology::{PartKind, TopologyFile};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = e.path();
        let text = std::fs::read_to_string(&path).unwrap();
        let p: PlatformFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let t = Topology::from_file(&TopologyFile {
            part: p.part.clone(),
            link: p.link.clone(),
            wire: p.wire.clone(),
        })
        .unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let pics = t.claimant(Request::Io(0x20)).expect("an 8259 pair");
        let core = t
            .parts
            .iter()
            .position(|x| matches!(x.kind, PartKind::Core { .. }))
            .expect("a core");
        // The port I/O goes up from the core to the host bridge and down to the 8259 pair.
        assert!(t.ancestry(core as u16).contains(&t.root), "{path:?}");
        assert!(t.ancestry(pics).contains(&t.root), "{path:?}");
        names.push(p.name);
    }
    names.sort();
    assert_eq!(
        names,
        [
            "bensley-2006",
            "desktop-2017",
            "pc-1998-k6-233-tx97",
            "soc-2008",
            "ws-2008"
        ],
        "a platform added or renamed: list it here"
    );
}
