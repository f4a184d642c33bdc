/** The meshmq.v1 protos, loaded at run time with @grpc/proto-loader (no code generator). */
import * as path from "node:path";
import * as fs from "node:fs";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/** Where the .proto files are: dist/proto in a built package (copied at build). */
export function protoRoot(): string {
  const candidates = [
    path.resolve(__dirname, "proto"), // dist/proto when this file is dist/proto.js
    path.resolve(__dirname, "..", "proto"), // dist/proto from dist/<sub>/
    path.resolve(__dirname, "..", "..", "..", "proto"), // the repository's proto/ (from dist/)
  ];
  for (const c of candidates) {
    if (fs.existsSync(path.join(c, "meshmq", "v1", "broker.proto"))) return c;
  }
  throw new Error(`meshmq protos not found (looked in ${candidates.join(", ")}); run npm run build`);
}

export const PROTO_FILES = ["meshmq/v1/broker.proto", "meshmq/v1/management.proto", "meshmq/v1/messages.proto"];

const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true, // snake_case field names, as on the wire and in docs/protocol.md
  enums: String,
  defaults: true,
  arrays: true,
  oneofs: true, // `kind` names the set field of a oneof
  longs: Number, // ids and counts fit; an int property past 2^53 loses precision
};

let loaded: { Broker: grpc.ServiceClientConstructor; Management: grpc.ServiceClientConstructor } | undefined;

/** The Broker and Management client constructors (loaded once). */
export function services() {
  if (!loaded) {
    const root = protoRoot();
    const def = protoLoader.loadSync(PROTO_FILES, { ...LOADER_OPTIONS, includeDirs: [root] });
    const pkg = grpc.loadPackageDefinition(def) as any;
    const Broker = pkg.meshmq.v1.Broker as grpc.ServiceClientConstructor;
    const session = Broker.service.Session;
    const decode = session.responseDeserialize;
    // Deliveries cost credit by their Message's encoded size (docs/protocol.md §6.2):
    // take it from the wire, where the length prefix of each Delivery.message is exactly that.
    const withSizes = (buf: Buffer) => {
      const obj = decode(buf);
      if (obj.kind === "deliveries") obj.deliveries.sizes = deliveryMessageSizes(buf);
      return obj;
    };
    const SizedBroker = grpc.makeGenericClientConstructor(
      { Session: { ...session, responseDeserialize: withSizes } }, "Broker");
    loaded = { Broker: SizedBroker, Management: pkg.meshmq.v1.Management };
  }
  return loaded;
}

function varint(buf: Buffer, pos: number): [number, number] {
  let result = 0;
  let shift = 0;
  for (;;) {
    const b = buf[pos++];
    result += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return [result, pos];
    shift += 7;
  }
}

/** Calls `each(field, start, end)` for every length-delimited field of buf[start, end). */
function lengthDelimited(buf: Buffer, start: number, end: number, each: (field: number, s: number, e: number) => void) {
  let pos = start;
  while (pos < end) {
    let tag: number;
    [tag, pos] = varint(buf, pos);
    const field = Math.floor(tag / 8);
    switch (tag & 7) {
      case 0: pos = varint(buf, pos)[1]; break;
      case 1: pos += 8; break;
      case 5: pos += 4; break;
      case 2: {
        let len: number;
        [len, pos] = varint(buf, pos);
        each(field, pos, pos + len);
        pos += len;
        break;
      }
      default: throw new Error(`unexpected wire type ${tag & 7}`);
    }
  }
}

/** The encoded size of each Delivery.message of a SessionResponse.deliveries frame, in order. */
export function deliveryMessageSizes(buf: Buffer): number[] {
  const sizes: number[] = [];
  lengthDelimited(buf, 0, buf.length, (f, s, e) => {
    if (f !== 4) return; // SessionResponse.deliveries
    lengthDelimited(buf, s, e, (f2, s2, e2) => {
      if (f2 !== 2) return; // DeliveryBatch.deliveries
      let size = 0;
      lengthDelimited(buf, s2, e2, (f3, s3, e3) => {
        if (f3 === 3) size = e3 - s3; // Delivery.message
      });
      sizes.push(size);
    });
  });
  return sizes;
}
