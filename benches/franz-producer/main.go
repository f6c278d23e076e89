// A minimal producer on franz-go (github.com/twmb/franz-go, Kafka's protocol in pure Go), for
// scripts/bench-produce.sh only: every line of a file is one record.
//
//	franz-producer -b BOOTSTRAP -t TOPIC -f FILE [-z none|gzip|snappy|lz4|zstd]
//	               [-linger-ms MS] [-batch-bytes B] [-H NAME=VALUE]...
//	franz-producer -version
//
// A line is KEY<TAB>VALUE (a line without a tab is a value without a key), as
// `kcat -P -K '\t' -l FILE` reads it; every record gets the -H headers. The file is read line
// by line, so peak RSS is the producer's own.
//
// Settings: franz-go's defaults but for the command line's and one more. Idempotent writes and
// acks=all are its defaults (kept); keyed records go where Kafka's murmur2 puts them (its
// default partitioner). MaxBufferedRecords is raised from 10000 to 100000, librdkafka's
// queue.buffering.max.messages, so that the buffer can hold a full batch.size of small
// records for every partition at once (10000 cannot). Exits 0 only when every record was
// acknowledged; otherwise prints the first error and exits 1.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type headerFlags []kgo.RecordHeader

func (h *headerFlags) String() string { return fmt.Sprint(*h) }

func (h *headerFlags) Set(option string) error {
	name, value, ok := strings.Cut(option, "=")
	if !ok {
		return fmt.Errorf("-H %q: NAME=VALUE expected", option)
	}
	*h = append(*h, kgo.RecordHeader{Key: name, Value: []byte(value)})
	return nil
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.NoCompression(), fmt.Errorf("unknown codec %q", name)
}

func main() {
	bootstrap := flag.String("b", "", "bootstrap servers")
	topic := flag.String("t", "", "topic")
	file := flag.String("f", "", "input file, one record per line")
	codecName := flag.String("z", "none", "compression codec")
	lingerMs := flag.Int("linger-ms", 5, "linger.ms")
	batchBytes := flag.Int("batch-bytes", 1048576, "batch.size")
	version := flag.Bool("version", false, "print franz-go's version")
	var headers headerFlags
	flag.Var(&headers, "H", "header NAME=VALUE (repeatable)")
	flag.Parse()
	if *version {
		fmt.Println("franz-go", franzVersion())
		return
	}
	if *bootstrap == "" || *topic == "" || *file == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	compression, err := codec(*codecName)
	if err == nil {
		var records int64
		records, err = produce(*bootstrap, *topic, *file, headers, []kgo.Opt{
			kgo.ProducerBatchCompression(compression),
			kgo.ProducerLinger(time.Duration(*lingerMs) * time.Millisecond),
			kgo.ProducerBatchMaxBytes(int32(*batchBytes)),
		})
		if err == nil {
			fmt.Fprintf(os.Stderr, "franz-producer: %d records acknowledged\n", records)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "franz-producer:", err)
	os.Exit(1)
}

func franzVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, module := range info.Deps {
			if module.Path == "github.com/twmb/franz-go" {
				return module.Version
			}
		}
	}
	return "unknown"
}

func produce(bootstrap, topic, file string, headers []kgo.RecordHeader, opts []kgo.Opt) (int64, error) {
	input, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer input.Close()
	opts = append(opts, kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(100000))
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer client.Close()

	var acknowledged atomic.Int64
	var firstError error
	var errorOnce sync.Once
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			errorOnce.Do(func() { firstError = err })
			return
		}
		acknowledged.Add(1)
	}
	ctx := context.Background()
	reader := bufio.NewReaderSize(input, 64*1024)
	var sent int64
	for {
		// ReadBytes returns a new slice per line: the record owns it until acknowledged.
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimSuffix(line, []byte{'\n'})
			record := &kgo.Record{Value: line, Headers: headers}
			if key, value, ok := bytes.Cut(line, []byte{'\t'}); ok {
				record.Key, record.Value = key, value
			}
			client.Produce(ctx, record, done)
			sent++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if err := client.Flush(ctx); err != nil {
		return 0, err
	}
	if firstError != nil {
		return 0, fmt.Errorf("produce failed: %w", firstError)
	}
	if got := acknowledged.Load(); got != sent {
		return 0, fmt.Errorf("%d of %d records acknowledged", got, sent)
	}
	return sent, nil
}
