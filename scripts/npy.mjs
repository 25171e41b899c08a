// Minimal, dependency-free .npy reader/writer (format version 1.0 only).
//
// Supported dtypes (little-endian, C order): <f4 <f8 <i8 <i4 |u1 |b1.
//   readNpy(path)  -> { dtype: 'float32'|'float64'|'int64'|'int32'|'uint8'|'bool',
//                       shape: number[], data: TypedArray }
//   writeNpy(path, dtype, shape, data)   (data: TypedArray or plain array)
// int64 data is a BigInt64Array. bool data is a Uint8Array of 0/1.
// Anything else (big-endian, Fortran order, object arrays, v2/v3 headers)
// throws with a message naming the file.
import fs from 'node:fs';

const DESCR_TO_DTYPE = {
  '<f4': 'float32', '<f8': 'float64', '<i8': 'int64', '<i4': 'int32',
  '|u1': 'uint8', '<u1': 'uint8', '|b1': 'bool', '<b1': 'bool',
};
const DTYPE_TO_DESCR = {
  float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4', uint8: '|u1', bool: '|b1',
};
const DTYPE_CTOR = {
  float32: Float32Array, float64: Float64Array, int64: BigInt64Array,
  int32: Int32Array, uint8: Uint8Array, bool: Uint8Array,
};
const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) {
  throw new Error('npy.mjs: big-endian hosts are not supported');
}

export function parseNpy(buf, name = '<buffer>') {
  const u8 = buf instanceof Uint8Array ? buf : new Uint8Array(buf);
  for (let i = 0; i < 6; ++i) {
    if (u8[i] !== MAGIC[i]) throw new Error(`${name}: not a .npy file`);
  }
  if (u8[6] !== 1) throw new Error(`${name}: unsupported .npy version ${u8[6]}.${u8[7]} (need 1.0)`);
  const hlen = u8[8] | (u8[9] << 8);
  const header = Buffer.from(u8.buffer, u8.byteOffset + 10, hlen).toString('latin1');
  const descr = /'descr'\s*:\s*'([^']*)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shapeM = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shapeM) throw new Error(`${name}: malformed header: ${header}`);
  const dtype = DESCR_TO_DTYPE[descr[1]];
  if (!dtype) throw new Error(`${name}: unsupported dtype '${descr[1]}'`);
  if (fortran[1] === 'True') throw new Error(`${name}: Fortran order not supported`);
  const shape = shapeM[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const Ctor = DTYPE_CTOR[dtype];
  const off = 10 + hlen;
  const nbytes = count * Ctor.BYTES_PER_ELEMENT;
  if (u8.length - off < nbytes) throw new Error(`${name}: truncated data (${u8.length - off} < ${nbytes} bytes)`);
  // Copy so the typed array is aligned regardless of header length.
  const data = new Ctor(count);
  new Uint8Array(data.buffer).set(u8.subarray(off, off + nbytes));
  return { dtype, shape, data };
}

export function readNpy(path) {
  return parseNpy(fs.readFileSync(path), path);
}

export function encodeNpy(dtype, shape, data) {
  const descr = DTYPE_TO_DESCR[dtype];
  if (!descr) throw new Error(`npy: unsupported dtype '${dtype}'`);
  const Ctor = DTYPE_CTOR[dtype];
  const count = shape.reduce((a, b) => a * b, 1);
  let arr = data;
  if (!(arr instanceof Ctor)) {
    arr = dtype === 'int64' ? BigInt64Array.from(data, (v) => BigInt(v)) : Ctor.from(data, (v) => (dtype === 'bool' ? (v ? 1 : 0) : v));
  }
  if (arr.length !== count) throw new Error(`npy: data has ${arr.length} elements, shape ${JSON.stringify(shape)} needs ${count}`);
  const shapeStr = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeStr}, }`;
  // Pad so that 10 + len(header incl. '\n') is a multiple of 64 (as numpy does).
  const total = Math.ceil((10 + header.length + 1) / 64) * 64;
  header = header + ' '.repeat(total - 10 - header.length - 1) + '\n';
  if (header.length > 65535) throw new Error('npy: header too long for version 1.0');
  const out = Buffer.alloc(10 + header.length + arr.byteLength);
  out.set(MAGIC, 0);
  out[6] = 1; out[7] = 0;
  out.writeUInt16LE(header.length, 8);
  out.write(header, 10, 'latin1');
  out.set(new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength), 10 + header.length);
  return out;
}

export function writeNpy(path, dtype, shape, data) {
  fs.writeFileSync(path, encodeNpy(dtype, shape, data));
}
