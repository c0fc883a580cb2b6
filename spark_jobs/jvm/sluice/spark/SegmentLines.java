package sluice.spark;

import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF6;
import scala.collection.Seq;

/**
 * The events of one segment of a part file, read and split in the JVM.
 *
 * <p>A Spark SQL function {@code (path, part_offset, length, start_offset, lines, events) ->
 * array<struct<byte_offset: bigint, line: binary, event_lines: bigint, cut: string>>}: the bytes
 * {@code [part_offset, part_offset + length)} of the local part file at {@code path}, split at
 * {@code \n} into lines and the lines joined into events. {@code events} are the segment's
 * multiline events ({@code array<struct<first_line: bigint, lines: bigint, cut: string, head:
 * bigint>>}, in order; null or empty: none): each is {@code lines} lines from the segment's line
 * {@code first_line} (counted from 0), and every line no event covers is an event of its own; a
 * span whose {@code head} (null or -1: none) is the index of an earlier span continues that
 * span's event (a container's stream, the other stream's lines between): its lines are joined to
 * that event's row after a {@code \n}, and it has no row of its own. An
 * event's row holds its bytes (its lines with the {@code \n} between them, without the last
 * line's), its offset in the source file ({@code start_offset} plus its position in the segment),
 * its lines and its event's {@code cut} (null for a line of its own). The segment's last line
 * may lack its {@code \n}; nothing else is removed or changed. The same contract as {@code
 * spark_jobs.segment_split.split_events}, and the same checks and messages as {@code
 * spark_jobs.staging.read_segments}: a segment that cannot be read whole, whose lines differ from
 * the manifest's {@code lines}, or whose events are not in order, apart and among its lines,
 * fails the task with a {@link SegmentException} naming the file and the segment. A null
 * argument but {@code events} gives null.
 */
public final class SegmentLines
    implements UDF6<String, Long, Long, Long, Long, Seq<Row>, List<Row>> {
  private static final long serialVersionUID = 1L;
  private static final byte NEWLINE = (byte) '\n';

  /** A segment that cannot be read, or holds other lines than its manifest says. */
  public static final class SegmentException extends IOException {
    private static final long serialVersionUID = 1L;

    SegmentException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  @Override
  public List<Row> call(
      String path, Long partOffset, Long length, Long startOffset, Long lines, Seq<Row> events)
      throws SegmentException {
    if (path == null || partOffset == null || length == null || startOffset == null || lines == null) {
      return null;
    }
    byte[] data = read(path, partOffset, length);
    int newlines = 0;
    for (byte b : data) {
      if (b == NEWLINE) {
        newlines++;
      }
    }
    boolean terminated = data.length == 0 || data[data.length - 1] == NEWLINE;
    int count = newlines + (terminated ? 0 : 1);
    if (count != lines) {
      throw new SegmentException(
          String.format(
              "%s: the segment at part_offset %d (%d bytes) holds %d lines, the manifest says %d",
              path, partOffset, length, count, lines),
          null);
    }
    int[] starts = new int[count];
    int line = 0;
    for (int i = 0; i < data.length && line < count; i++) {
      if (i == 0 || data[i - 1] == NEWLINE) {
        starts[line++] = i;
      }
    }
    int spans = events == null ? 0 : events.length();
    long[] spanFirst = new long[spans];
    long[] spanLines = new long[spans];
    String[] spanCut = new String[spans];
    long[] spanHead = new long[spans];
    boolean joined = false;
    long end = 0;
    for (int n = 0; n < spans; n++) {
      Row span = events.apply(n);
      spanFirst[n] = span.getLong(0);
      spanLines[n] = span.getLong(1);
      spanCut[n] = span.isNullAt(2) ? null : span.getString(2);
      spanHead[n] = span.length() > 3 && !span.isNullAt(3) ? span.getLong(3) : -1;
      if (spanHead[n] >= n || (spanHead[n] >= 0 && spanHead[(int) spanHead[n]] >= 0)) {
        throw new SegmentException(
            String.format(
                "%s: the segment at part_offset %d (%d bytes) lists span %d as continuing span "
                    + "%d, which is not an earlier span that begins its event",
                path, partOffset, length, n, spanHead[n]),
            null);
      }
      joined |= spanHead[n] >= 0;
      if (spanFirst[n] < end || spanLines[n] < 1 || spanFirst[n] + spanLines[n] > count) {
        throw new SegmentException(
            String.format(
                "%s: the segment at part_offset %d (%d bytes) lists event %d at lines %d..%d, not "
                    + "after the event before and among its %d lines",
                path, partOffset, length, n, spanFirst[n], spanFirst[n] + spanLines[n] - 1, count),
            null);
      }
      end = spanFirst[n] + spanLines[n];
    }
    List<Row> rows = new ArrayList<>(count);
    int[] rowOfSpan = new int[spans];
    int span = 0;
    line = 0;
    while (line < count) {
      long eventLines = 1;
      String cut = null;
      if (span < spans && spanFirst[span] == line) {
        eventLines = spanLines[span];
        cut = spanCut[span];
        rowOfSpan[span] = rows.size();
        span++;
      }
      int next = line + (int) eventLines;
      int begin = starts[line];
      int stop = next < count ? starts[next] - 1 : (terminated ? data.length - 1 : data.length);
      rows.add(
          RowFactory.create(
              startOffset + begin, Arrays.copyOfRange(data, begin, stop), eventLines, cut));
      line = next;
    }
    return joined ? join(rows, rowOfSpan, spanHead) : rows;
  }

  /** {@code rows} with each span that continues an event appended to its event's row. */
  private static List<Row> join(List<Row> rows, int[] rowOfSpan, long[] spanHead) {
    Row[] merged = rows.toArray(new Row[0]);
    for (int n = 0; n < spanHead.length; n++) {
      if (spanHead[n] < 0) {
        continue;
      }
      int headRow = rowOfSpan[(int) spanHead[n]];
      Row head = merged[headRow];
      Row piece = merged[rowOfSpan[n]];
      byte[] first = (byte[]) head.get(1);
      byte[] rest = (byte[]) piece.get(1);
      byte[] both = Arrays.copyOf(first, first.length + 1 + rest.length);
      both[first.length] = NEWLINE;
      System.arraycopy(rest, 0, both, first.length + 1, rest.length);
      merged[headRow] =
          RowFactory.create(
              head.get(0), both, head.getLong(2) + piece.getLong(2), head.get(3));
      merged[rowOfSpan[n]] = null;
    }
    List<Row> result = new ArrayList<>(merged.length);
    for (Row row : merged) {
      if (row != null) {
        result.add(row);
      }
    }
    return result;
  }

  private static byte[] read(String path, long partOffset, long length) throws SegmentException {
    if (length > Integer.MAX_VALUE - 8) {
      throw new SegmentException(
          String.format(
              "%s: the segment at part_offset %d (%d bytes) is too large to split",
              path, partOffset, length),
          null);
    }
    try (RandomAccessFile file = new RandomAccessFile(path, "r")) {
      long size = file.length();
      if (size < partOffset + length) {
        throw new SegmentException(
            String.format(
                "%s: short read: the segment at part_offset %d needs bytes up to %d, the file has %d",
                path, partOffset, partOffset + length, size),
            null);
      }
      byte[] data = new byte[(int) length];
      file.seek(partOffset);
      file.readFully(data);
      return data;
    } catch (SegmentException exc) {
      throw exc;
    } catch (EOFException exc) {
      throw new SegmentException(
          String.format(
              "%s: short read: the segment at part_offset %d needs bytes up to %d",
              path, partOffset, partOffset + length),
          exc);
    } catch (IOException exc) {
      throw new SegmentException(
          String.format(
              "%s: cannot read the segment at part_offset %d: %s", path, partOffset, exc),
          exc);
    }
  }
}
