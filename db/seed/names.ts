/**
 * Invented vocabulary for the demo company (Cascade Ridge Builders, a general contractor in a
 * made-up corner of Oregon). Every person, company, address, phone number and id is fictional:
 * phone numbers use the 555-01xx range reserved for fiction, e-mail domains are under .example,
 * and the SSN-like ids start with 9 (a range never issued as a social security number).
 */
import type { Prng } from './prng';

export const COMPANY = {
  name: 'Cascade Ridge Builders, Inc.',
  shortName: 'CASCADE',
  city: 'Millbrook',
  state: 'OR',
};

export const FIRST_NAMES = [
  'Aaron', 'Abby', 'Adrian', 'Alma', 'Amos', 'Ana', 'Arlo', 'Beatriz', 'Bennett', 'Bianca', 'Brody', 'Callie', 'Camila', 'Carter',
  'Celia', 'Dalton', 'Dana', 'Darnell', 'Delia', 'Dmitri', 'Eamon', 'Edith', 'Elias', 'Elena', 'Emmett', 'Esme', 'Felix', 'Fiona',
  'Gideon', 'Greta', 'Hank', 'Hazel', 'Hector', 'Ingrid', 'Isaac', 'Ivy', 'Jasper', 'Joelle', 'Jonah', 'Juniper', 'Kai', 'Keira',
  'Lars', 'Leona', 'Levi', 'Lucia', 'Marcus', 'Mabel', 'Mateo', 'Maren', 'Milo', 'Nadia', 'Nolan', 'Nora', 'Omar', 'Opal', 'Otis',
  'Paloma', 'Quinn', 'Rafael', 'Rosa', 'Rowan', 'Ruth', 'Silas', 'Sofia', 'Stellan', 'Tamsin', 'Tobias', 'Uma', 'Vera', 'Wade',
  'Wren', 'Xavier', 'Yara', 'Zane', 'Zora',
];

export const LAST_NAMES = [
  'Abernathy', 'Alcott', 'Bramwell', 'Castellano', 'Calloway', 'Dunmore', 'Eastwick', 'Fairbanks', 'Galloway', 'Hargrove',
  'Ibarra', 'Jessup', 'Kettering', 'Lindqvist', 'Marchetti', 'Northcott', 'Okafor', 'Pendleton', 'Quintero', 'Ravensworth',
  'Salcedo', 'Thornbury', 'Underhill', 'Valdivia', 'Whitlock', 'Yamaguchi', 'Zielinski', 'Ashgrove', 'Blackwood', 'Corrigan',
  'Delacroix', 'Ellsworth', 'Fenwick', 'Greenhalgh', 'Holloway', 'Iverson', 'Jaramillo', 'Kowalczyk', 'Lockhart', 'Montague',
  'Nakamura', 'Oyelaran', 'Prescott', 'Rasmussen', 'Stavros', 'Tremaine', 'Vasquez', 'Westerberg', 'Winslow', 'Yelverton',
];

export const STREET_NAMES = [
  'Alder', 'Basalt', 'Birchwood', 'Cedar Hollow', 'Copperfield', 'Dogwood', 'Elk Ridge', 'Fernhill', 'Foundry', 'Granite',
  'Harbor View', 'Huckleberry', 'Ironwood', 'Juniper', 'Kestrel', 'Larkspur', 'Madrona', 'Millrace', 'Northgate', 'Old Mill',
  'Pinecrest', 'Quarry', 'Riverbend', 'Sawmill', 'Silverleaf', 'Summit', 'Tamarack', 'Timberline', 'Union', 'Willow Creek',
];
export const STREET_KINDS = ['St', 'Ave', 'Rd', 'Way', 'Ln', 'Dr', 'Ct', 'Blvd', 'Pl'];

export const CITIES: ReadonlyArray<readonly [string, string, string]> = [
  ['Millbrook', 'OR', '974'],
  ['Cedar Falls', 'OR', '973'],
  ['Harlow Junction', 'OR', '975'],
  ['North Basin', 'OR', '977'],
  ['Pinecrest', 'WA', '986'],
  ['Riverton Heights', 'OR', '974'],
  ['Stillwater Bay', 'OR', '973'],
  ['Tamarack', 'WA', '986'],
  ['Westhaven', 'OR', '971'],
  ['Quarry Springs', 'OR', '975'],
];

const VENDOR_PREFIX = [
  'Summit', 'Timberline', 'Cascade', 'Basin', 'Ironclad', 'Keystone', 'Ridgeway', 'Northwind', 'Granite Peak', 'Riverbend',
  'Copperline', 'Evergreen', 'Blue Heron', 'Alder Creek', 'Stonegate', 'Redtail', 'Harbor', 'Pioneer', 'Trailhead', 'Valley',
];

export interface VendorKind {
  type: number;
  typeName: string;
  words: readonly string[];
  /** Default ledger account of invoice lines. */
  account: number;
  /** Default cost type of job cost lines. */
  costType: number;
  subcontractor: boolean;
  weight: number;
}

/** Vendor types; accounts refer to the chart in chart.ts. */
export const VENDOR_KINDS: readonly VendorKind[] = [
  { type: 1, typeName: 'Material supplier', words: ['Building Supply', 'Lumber Co.', 'Concrete Products', 'Steel Supply', 'Electrical Supply', 'Plumbing Wholesale'], account: 5010, costType: 1, subcontractor: false, weight: 8 },
  { type: 2, typeName: 'Subcontractor', words: ['Excavation', 'Drywall Inc.', 'Roofing', 'Mechanical', 'Electric LLC', 'Painting', 'Paving', 'Masonry'], account: 5040, costType: 4, subcontractor: true, weight: 6 },
  { type: 3, typeName: 'Equipment rental and repair', words: ['Equipment Rental', 'Diesel Repair', 'Fleet Services', 'Hydraulics'], account: 6020, costType: 3, subcontractor: false, weight: 3 },
  { type: 4, typeName: 'Fuel', words: ['Fuel & Oil', 'Petroleum'], account: 6010, costType: 3, subcontractor: false, weight: 1 },
  { type: 5, typeName: 'Services and utilities', words: ['Insurance Agency', 'Utilities District', 'Office Supply', 'CPA Group', 'Telecom', 'Waste Hauling'], account: 7060, costType: 5, subcontractor: false, weight: 2 },
  { type: 6, typeName: 'Permits and agencies', words: ['County Permit Center', 'Building Department', 'Water District'], account: 5060, costType: 6, subcontractor: false, weight: 1 },
];

const CLIENT_WORDS = [
  'Properties', 'Development Group', 'School District', 'Medical Center', 'Holdings LLC', 'Housing Authority', 'Church',
  'Partners', 'Hospitality', 'Self Storage', 'Credit Union', 'Brewing Co.', 'Veterinary Clinic', 'Apartments', 'Realty',
];

const JOB_KINDS = [
  'Office Remodel', 'Warehouse Addition', 'Medical Office Building', 'Tenant Improvement', 'Retail Center', 'Elementary School Wing',
  'Fire Station', 'Parking Structure', 'Apartment Complex', 'Clinic Expansion', 'Community Center', 'Library Renovation',
  'Distribution Center', 'Bank Branch', 'Restaurant Build-out', 'Townhomes Phase', 'Storage Facility', 'Gymnasium',
];

export const PHASE_NAMES = ['Site preparation', 'Foundation', 'Structure', 'Enclosure', 'Interiors', 'Closeout'];

/** Part classes: name, base items, unit, sizes, variants. */
export const PART_CLASSES: ReadonlyArray<readonly [string, readonly string[], string, readonly string[], readonly string[]]> = [
  ['Lumber', ['2x4 Stud', '2x6 Plate', '2x10 Joist', '4x4 Post', 'LVL Beam', 'Plywood Sheathing', 'OSB Panel'], 'EA', ['8 ft', '10 ft', '12 ft', '16 ft', '4x8 sheet'], ['Douglas Fir', 'Hem-Fir', 'Treated', 'Kiln Dried', 'Select']],
  ['Concrete', ['Ready-mix', 'Rebar #4', 'Rebar #5', 'Wire Mesh', 'Form Tie', 'Anchor Bolt', 'Grout Bag'], 'EA', ['20 ft', '1/2 in', '5/8 in', '60 lb', '80 lb'], ['Grade 60', 'Epoxy Coated', 'Standard', 'High Early', 'Galvanized']],
  ['Fasteners', ['Framing Nail', 'Deck Screw', 'Lag Bolt', 'Hex Nut', 'Flat Washer', 'Drywall Screw', 'Concrete Anchor'], 'BX', ['#8 x 1-5/8', '3/8 x 4', '16d', '1/2 in', '1/4 x 2-3/4'], ['Galvanized', 'Stainless', 'Zinc', 'Coated', 'Hot-dip']],
  ['Electrical', ['Romex 12/2', 'Romex 14/2', 'EMT Conduit', 'Junction Box', 'Breaker 20A', 'Duplex Receptacle', 'LED Troffer'], 'EA', ['1/2 in', '3/4 in', '250 ft', '4 in square', '2x4'], ['Commercial', 'Spec Grade', 'Tamper Resistant', 'Standard', 'UL Listed']],
  ['Plumbing', ['PEX Pipe', 'Copper Elbow', 'PVC Tee', 'Ball Valve', 'Water Heater', 'Floor Drain', 'Cleanout Plug'], 'EA', ['1/2 in', '3/4 in', '1 in', '2 in', '50 gal'], ['Lead Free', 'Schedule 40', 'Type L', 'Commercial', 'Standard']],
  ['HVAC', ['Duct Section', 'Register', 'Flex Duct', 'Thermostat', 'Filter 20x25', 'Damper', 'Condensate Pump'], 'EA', ['6 in', '8 in', '10 in', '12x6', '1 in'], ['Insulated', 'Programmable', 'MERV 11', 'Galvanized', 'Standard']],
  ['Drywall', ['Gypsum Board', 'Joint Compound', 'Corner Bead', 'Joint Tape', 'Metal Stud'], 'EA', ['1/2 in 4x8', '5/8 in 4x12', '4.5 gal', '8 ft', '3-5/8 in'], ['Type X', 'Moisture Resistant', 'Lightweight', 'Standard', '25 ga']],
  ['Finishes', ['Interior Paint', 'Primer', 'Ceramic Tile', 'Vinyl Plank', 'Carpet Tile', 'Base Cove', 'Caulk Tube'], 'EA', ['1 gal', '5 gal', '12x24', '4 in', '10 oz'], ['Eggshell', 'Satin', 'Commercial', 'Matte', 'Standard']],
  ['Doors and hardware', ['Hollow Metal Door', 'Door Frame', 'Lever Set', 'Closer', 'Hinge Pair', 'Panic Bar'], 'EA', ['3070', '3068', 'Grade 1', 'Grade 2', '4-1/2 in'], ['Satin Chrome', 'Primed', 'Fire Rated', 'Heavy Duty', 'ADA']],
  ['Safety', ['Hard Hat', 'Safety Vest', 'Fall Harness', 'Traffic Cone', 'First Aid Kit', 'Ear Plugs'], 'EA', ['Class 2', 'Universal', '28 in', '50 person', 'Box of 200'], ['ANSI', 'Hi-Vis', 'OSHA', 'Standard', 'Reflective']],
];

export const EQUIPMENT_KINDS: ReadonlyArray<readonly [string, number, number]> = [
  // name, hourly internal rate, purchase cost (thousands)
  ['Excavator', 95, 240],
  ['Skid Steer Loader', 55, 68],
  ['Backhoe', 70, 115],
  ['Dump Truck', 65, 135],
  ['Pickup Truck', 22, 48],
  ['Forklift', 35, 42],
  ['Boom Lift', 45, 88],
  ['Scissor Lift', 28, 24],
  ['Concrete Mixer', 30, 36],
  ['Compactor', 25, 18],
  ['Generator', 18, 15],
  ['Flatbed Trailer', 15, 22],
];
const EQUIPMENT_MAKES = ['Hartline', 'Brennan', 'Kobold', 'Tessaro', 'Ardent', 'Norquist'];

export const TRADES: ReadonlyArray<readonly [string, number, number, number]> = [
  // title, min hourly, max hourly, weight
  ['Laborer', 21, 27, 6],
  ['Carpenter', 29, 38, 5],
  ['Equipment Operator', 32, 41, 3],
  ['Concrete Finisher', 28, 35, 2],
  ['Foreman', 38, 46, 2],
  ['Mechanic', 30, 37, 1],
  ['Service Technician', 30, 39, 2],
];

export function personName(r: Prng): { first: string; last: string; middle: string } {
  return { first: r.pick(FIRST_NAMES), last: r.pick(LAST_NAMES), middle: String.fromCharCode(65 + r.int(0, 25)) };
}

export function address(r: Prng): { street: string; city: string; state: string; zip: string } {
  const [city, state, zip3] = r.pick(CITIES);
  return {
    street: `${r.int(100, 9899)} ${r.pick(STREET_NAMES)} ${r.pick(STREET_KINDS)}`,
    city,
    state,
    zip: `${zip3}${String(r.int(1, 99)).padStart(2, '0')}`,
  };
}

/** 555-01xx: reserved for fictional use. */
export function phone(r: Prng): string {
  return `(${r.pick(['503', '541', '971', '360'])}) 555-01${String(r.int(0, 99)).padStart(2, '0')}`;
}

/** SSN-shaped but never issued: area numbers 900-999 are not valid social security numbers. */
export function fakeTaxId(r: Prng): string {
  return `9${String(r.int(0, 99)).padStart(2, '0')}-${String(r.int(1, 99)).padStart(2, '0')}-${String(r.int(1, 9999)).padStart(4, '0')}`;
}

export function vendorName(r: Prng, kind: VendorKind, n: number): string {
  return `${r.pick(VENDOR_PREFIX)} ${r.pick(kind.words)}${n > VENDOR_PREFIX.length * 4 ? ` ${n}` : ''}`;
}

export function clientName(r: Prng, n: number): string {
  const surname = r.pick(LAST_NAMES);
  return `${r.chance(0.5) ? surname : r.pick(VENDOR_PREFIX)} ${r.pick(CLIENT_WORDS)}${n > 200 ? ` ${n}` : ''}`;
}

export function jobName(r: Prng, city: string): string {
  return `${city} ${r.pick(JOB_KINDS)}`;
}

export function partName(r: Prng, base: string, sizes: readonly string[], variants: readonly string[]): string {
  return `${base} ${r.pick(sizes)} ${r.pick(variants)}`;
}

export function equipmentName(r: Prng, kind: string): { name: string; make: string; model: string; serial: string } {
  const make = r.pick(EQUIPMENT_MAKES);
  return {
    name: `${kind} ${make}`,
    make,
    model: `${kind.slice(0, 2).toUpperCase()}-${r.int(100, 990)}`,
    serial: `SN${r.int(100000, 999999)}${String.fromCharCode(65 + r.int(0, 25))}`,
  };
}

/** Upper-case short name (the legacy `shtnme`, 15 characters). */
export function shortName(name: string, n: number): string {
  const letters = name.replace(/[^A-Za-z]/g, '').toUpperCase().slice(0, 9);
  return `${letters}${n}`.slice(0, 15);
}

export function email(first: string, last: string, domain: string): string {
  return `${first}.${last}`.toLowerCase().replace(/[^a-z.]/g, '') + `@${domain}`;
}

export function domainOf(company: string): string {
  return company.toLowerCase().replace(/[^a-z]+/g, '-').replace(/^-|-$/g, '').slice(0, 30) + '.example';
}
