package sluice.spark;

import java.util.Arrays;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The fields of an nginx {@code combined} access-log line, scanned from its bytes in one pass.
 *
 * <p>A Spark SQL function {@code line: binary -> array<binary>}: the eleven fields of {@code
 * spark_jobs.formats.NGINX_FIELDS}, in order, or null when the line does not match {@code
 * spark_jobs.formats.NGINX_PATTERN}. It is that pattern as a scanner: every quantifier of the
 * pattern is possessive or followed by a byte its run cannot hold, so a left-to-right scan
 * that never backs up decides a match exactly as the regular expression does, and yields the
 * same groups. The request's words ({@code method}, {@code path}, {@code protocol}) are null
 * unless the request is exactly three words, where the pattern's groups are empty.
 *
 * <p>The line must be valid UTF-8 (the landing rejects the others before parsing): a byte at or
 * above {@code 0x80} is then part of a character above {@code U+0020}, which every field may
 * hold, so scanning bytes decides as scanning characters does. Nothing is decoded; the fields
 * are copies of the line's bytes. A null line gives null.
 */
public final class NginxFields implements UDF1<byte[], byte[][]> {
  private static final long serialVersionUID = 1L;
  private static final int FIELDS = 11;
  private static final int METHOD = 4;

  @Override
  public byte[][] call(byte[] line) {
    return line == null ? null : new Scan(line).fields();
  }

  /** One line's scan: a position that only moves forward. */
  private static final class Scan {
    private final byte[] line;
    private int at;

    Scan(byte[] line) {
      this.line = line;
    }

    byte[][] fields() {
      byte[][] fields = new byte[FIELDS][];
      // ([^\x00-\x20]++) - ([^\x00-\x20]++) \[([^\]\x00-\x1f]++)\] "
      int start = at;
      if (skipAbove(' ') == 0) {
        return null;
      }
      fields[0] = copy(start);
      if (!expect(" - ")) {
        return null;
      }
      start = at;
      if (skipAbove(' ') == 0) {
        return null;
      }
      fields[1] = copy(start);
      if (!expect(" [")) {
        return null;
      }
      start = at;
      if (skipText(']') == 0) {
        return null;
      }
      fields[2] = copy(start);
      if (!expect("] \"")) {
        return null;
      }
      // ((W) (W) (W)|[^"\x00-\x1f]*+)" (\d{3}) (\d++|-) "
      start = at;
      skipText('"');
      fields[3] = copy(start);
      words(fields, start, at);
      if (!expect("\" ")) {
        return null;
      }
      start = at;
      if (skipDigits() != 3) {
        return null;
      }
      fields[7] = copy(start);
      if (!expect(" ")) {
        return null;
      }
      start = at;
      if (skipDigits() == 0 && !expect("-")) {
        return null;
      }
      fields[8] = copy(start);
      if (!expect(" \"")) {
        return null;
      }
      // ([^"\x00-\x1f]*+)" "([^"\x00-\x1f]*+)"\r?\z
      start = at;
      skipText('"');
      fields[9] = copy(start);
      if (!expect("\" \"")) {
        return null;
      }
      start = at;
      skipText('"');
      fields[10] = copy(start);
      if (!expect("\"")) {
        return null;
      }
      expect("\r");
      return at == line.length ? fields : null;
    }

    /** The request {@code [start, end)} as its three words, when it is exactly three. */
    private void words(byte[][] fields, int start, int end) {
      // The request holds no byte below 0x20, so its words are split by its spaces alone.
      int first = indexOf(' ', start, end);
      int second = first < 0 ? -1 : indexOf(' ', first + 1, end);
      if (second < 0 || indexOf(' ', second + 1, end) >= 0) {
        return;
      }
      if (first == start || second == first + 1 || end == second + 1) {
        return;
      }
      fields[METHOD] = Arrays.copyOfRange(line, start, first);
      fields[METHOD + 1] = Arrays.copyOfRange(line, first + 1, second);
      fields[METHOD + 2] = Arrays.copyOfRange(line, second + 1, end);
    }

    private int indexOf(char wanted, int from, int end) {
      for (int i = from; i < end; i++) {
        if (line[i] == wanted) {
          return i;
        }
      }
      return -1;
    }

    /** Skip bytes above {@code limit} (unsigned); how many. */
    private int skipAbove(char limit) {
      int start = at;
      while (at < line.length && (line[at] & 0xff) > limit) {
        at++;
      }
      return at - start;
    }

    /** Skip bytes that are neither {@code stop} nor a control character; how many. */
    private int skipText(char stop) {
      int start = at;
      while (at < line.length && (line[at] & 0xff) >= 0x20 && line[at] != stop) {
        at++;
      }
      return at - start;
    }

    private int skipDigits() {
      int start = at;
      while (at < line.length && line[at] >= '0' && line[at] <= '9') {
        at++;
      }
      return at - start;
    }

    /** Step over {@code text} if the line goes on with it; whether it did. */
    private boolean expect(String text) {
      int length = text.length();
      if (line.length - at < length) {
        return false;
      }
      for (int i = 0; i < length; i++) {
        if (line[at + i] != text.charAt(i)) {
          return false;
        }
      }
      at += length;
      return true;
    }

    /** The bytes from {@code start} to the position. */
    private byte[] copy(int start) {
      return Arrays.copyOfRange(line, start, at);
    }
  }
}
