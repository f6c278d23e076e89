package dev.krec.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.CloseableIterator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The Java client's record decoding, the way its consumer does it (CompletedFetch): one
 * benchmark operation decodes one whole segment file written by {@code gen_bench_segments}.
 *
 * <p>Per batch: {@code ensureValid()} (CRC32C), then {@code streamingIterator} with one
 * {@link BufferSupplier} kept for the whole run, so decompression buffers are reused (the
 * KAFKA-5150 path). Per record: offset, timestamp, key and value size and first byte, and
 * two header lookups by key, exactly what {@code benches/decode_vs_java.rs} does on the Rust
 * side. The score is files per second; the runner multiplies it by the manifest's record count.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class DecodeBench {
    private static final String LOOKUP_A = "trace-id";
    private static final String LOOKUP_B = "content-type";

    /** Directory holding manifest.tsv and the segment files. */
    @Param({"target/bench-segments"})
    public String dir;

    /** Shape name, as in the manifest's first column. */
    @Param({"1x100B-0h-none"})
    public String shape;

    private ByteBuffer segment;
    private final BufferSupplier bufferSupplier = BufferSupplier.create();

    @Setup(Level.Trial)
    public void load() throws IOException {
        ManifestEntry entry = ManifestEntry.find(Path.of(dir), shape);
        // Heap buffer: the consumer's network receive buffers are heap buffers too.
        segment = ByteBuffer.wrap(Files.readAllBytes(Path.of(dir).resolve(entry.file)));
        Tally tally = new Tally();
        decode(segment.duplicate(), bufferSupplier, tally);
        if (tally.records != entry.records || tally.batches != entry.batches) {
            throw new IllegalStateException(String.format(
                "%s: the Java client decoded %d batches / %d records, the manifest says %d / %d",
                shape, tally.batches, tally.records, entry.batches, entry.records));
        }
        if (tally.headersFound != entry.headerLookupsExpected()) {
            throw new IllegalStateException(String.format(
                "%s: found %d of the %d looked-up headers", shape, tally.headersFound,
                entry.headerLookupsExpected()));
        }
    }

    @Benchmark
    public void decodeFile(Blackhole bh) {
        Tally tally = new Tally();
        decode(segment.duplicate(), bufferSupplier, tally);
        bh.consume(tally.checksum);
        bh.consume(tally.records);
    }

    /** What the decode read, so the JIT cannot drop any of it and the setup can check it. */
    static final class Tally {
        long checksum;
        long records;
        long batches;
        long headersFound;
    }

    static void decode(ByteBuffer buffer, BufferSupplier bufferSupplier, Tally tally) {
        MemoryRecords records = MemoryRecords.readableRecords(buffer);
        long checksum = 0;
        long count = 0;
        long found = 0;
        for (MutableRecordBatch batch : records.batches()) {
            batch.ensureValid();
            tally.batches++;
            try (CloseableIterator<Record> it = batch.streamingIterator(bufferSupplier)) {
                while (it.hasNext()) {
                    Record record = it.next();
                    count++;
                    checksum += record.offset() + record.timestamp();
                    checksum += touch(record.key()) + touch(record.value());
                    Header[] headers = record.headers();
                    byte[] a = lastHeaderValue(headers, LOOKUP_A);
                    byte[] b = lastHeaderValue(headers, LOOKUP_B);
                    if (a != null) {
                        checksum += a.length;
                        found++;
                    }
                    if (b != null) {
                        checksum += b.length;
                        found++;
                    }
                }
            }
        }
        tally.checksum += checksum;
        tally.records += count;
        tally.headersFound += found;
    }

    /** Size plus first byte: reads the buffer without copying it, like the Rust side. */
    private static long touch(ByteBuffer bytes) {
        if (bytes == null) {
            return 0;
        }
        int size = bytes.remaining();
        return size == 0 ? 0 : size + bytes.get(bytes.position());
    }

    /** RecordHeaders.lastHeader's search, over the array the record holds. */
    private static byte[] lastHeaderValue(Header[] headers, String key) {
        for (int i = headers.length - 1; i >= 0; i--) {
            if (key.equals(headers[i].key())) {
                return headers[i].value();
            }
        }
        return null;
    }

    /** One line of manifest.tsv: shape, file, batches, records, bytes, headers per record. */
    static final class ManifestEntry {
        final String file;
        final long batches;
        final long records;
        final int headers;

        private ManifestEntry(String file, long batches, long records, int headers) {
            this.file = file;
            this.batches = batches;
            this.records = records;
            this.headers = headers;
        }

        /** Records with 4 headers carry both looked-up keys; with 0 headers, none. */
        long headerLookupsExpected() {
            return headers >= 4 ? 2 * records : 0;
        }

        static ManifestEntry find(Path dir, String shape) throws IOException {
            List<String> lines = Files.readAllLines(dir.resolve("manifest.tsv"), StandardCharsets.UTF_8);
            for (String line : lines) {
                if (line.startsWith("#") || line.isBlank()) {
                    continue;
                }
                String[] f = line.split("\t");
                if (f.length < 6) {
                    throw new IOException("manifest.tsv: expected 6 columns in: " + line);
                }
                if (f[0].equals(shape)) {
                    return new ManifestEntry(f[1], Long.parseLong(f[2]), Long.parseLong(f[3]),
                        Integer.parseInt(f[5]));
                }
            }
            throw new IOException("manifest.tsv in " + dir + " has no shape " + shape);
        }
    }
}
