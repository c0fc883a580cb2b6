package sluice.spark;

import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF5;

/**
 * The lines of one segment of a part file, read and split in the JVM.
 *
 * <p>A Spark SQL function {@code (path, part_offset, length, start_offset, lines) ->
 * array<struct<byte_offset: bigint, line: binary>>}: the bytes {@code [part_offset, part_offset +
 * length)} of the local part file at {@code path}, split at {@code \n} into lines, each with its
 * offset in the source file ({@code start_offset} plus its position in the segment). A line's
 * bytes stop before its {@code \n}; the segment's last line may lack one; nothing else is removed
 * or changed. The same contract as {@code spark_jobs.staging.split_segment}, and the same checks
 * and messages as {@code spark_jobs.staging.read_segments}: a segment that cannot be read whole,
 * or whose lines differ from the manifest's {@code lines}, fails the task with a {@link
 * SegmentException} naming the file and the segment. A null argument gives null.
 */
public final class SegmentLines implements UDF5<String, Long, Long, Long, Long, List<Row>> {
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
  public List<Row> call(String path, Long partOffset, Long length, Long startOffset, Long lines)
      throws SegmentException {
    if (path == null || partOffset == null || length == null || startOffset == null || lines == null) {
      return null;
    }
    byte[] data = read(path, partOffset, length);
    List<Row> rows = new ArrayList<>((int) Math.min(lines, Integer.MAX_VALUE - 8));
    int start = 0;
    for (int i = 0; i < data.length; i++) {
      if (data[i] == NEWLINE) {
        rows.add(RowFactory.create(startOffset + start, Arrays.copyOfRange(data, start, i)));
        start = i + 1;
      }
    }
    if (start < data.length) {
      rows.add(RowFactory.create(startOffset + start, Arrays.copyOfRange(data, start, data.length)));
    }
    if (rows.size() != lines) {
      throw new SegmentException(
          String.format(
              "%s: the segment at part_offset %d (%d bytes) holds %d lines, the manifest says %d",
              path, partOffset, length, rows.size(), lines),
          null);
    }
    return rows;
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
