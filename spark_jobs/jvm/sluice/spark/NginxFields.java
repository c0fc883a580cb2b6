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

  /** One line's scan: a position that only moves forward, and the fields taken so far. */
  private static final class Scan {
    private final byte[] line;
    private final byte[][] fields = new byte[FIELDS][];
    private int at;

    Scan(byte[] line) {
      this.line = line;
    }

    /** The pattern, piece by piece; the fields, or null at the first piece that fails. */
    byte[][] fields() {
      boolean matched =
          word(0) // ([^\x00-\x20]++)
              && expect(" - ")
              && word(1) // ([^\x00-\x20]++)
              && expect(" [")
              && text(2, ']', 1) // ([^\]\x00-\x1f]++)
              && expect("] \"")
              && request() // ((W) (W) (W)|[^"\x00-\x1f]*+)
              && expect("\" ")
              && digits(7, 3, 3) // (\d{3})
              && expect(" ")
              && (digits(8, 1, Integer.MAX_VALUE) || dash(8)) // (\d++|-)
              && expect(" \"")
              && text(9, '"', 0) // ([^"\x00-\x1f]*+)
              && expect("\" \"")
              && text(10, '"', 0) // ([^"\x00-\x1f]*+)
              && expect("\"");
      if (matched) {
        expect("\r"); // \r?
      }
      return matched && at == line.length ? fields : null; // \z
    }

    /** Field {@code index}: one or more bytes above {@code 0x20}. */
    private boolean word(int index) {
      int start = at;
      while (at < line.length && (line[at] & 0xff) > ' ') {
        at++;
      }
      return take(index, start, 1, Integer.MAX_VALUE);
    }

    /** Field {@code index}: {@code least} or more bytes, none {@code stop} or a control. */
    private boolean text(int index, char stop, int least) {
      int start = at;
      while (at < line.length && (line[at] & 0xff) >= 0x20 && line[at] != stop) {
        at++;
      }
      return take(index, start, least, Integer.MAX_VALUE);
    }

    /** Field {@code index}: {@code least} to {@code most} ASCII digits. */
    private boolean digits(int index, int least, int most) {
      int start = at;
      while (at < line.length && line[at] >= '0' && line[at] <= '9') {
        at++;
      }
      return take(index, start, least, most);
    }

    /** Field {@code index}: {@code -}. */
    private boolean dash(int index) {
      int start = at;
      return expect("-") && take(index, start, 1, 1);
    }

    /**
     * The request ({@code [^"\x00-\x1f]*+}), and its words when it is exactly three: the words
     * hold no {@code "} and no byte up to {@code 0x20}, which the request holds only as spaces.
     */
    private boolean request() {
      int start = at;
      text(3, '"', 0);
      int first = indexOfSpace(start, at);
      int second = first < 0 ? -1 : indexOfSpace(first + 1, at);
      boolean three =
          second >= 0
              && indexOfSpace(second + 1, at) < 0
              && first > start
              && second > first + 1
              && at > second + 1;
      if (three) {
        fields[METHOD] = Arrays.copyOfRange(line, start, first);
        fields[METHOD + 1] = Arrays.copyOfRange(line, first + 1, second);
        fields[METHOD + 2] = Arrays.copyOfRange(line, second + 1, at);
      }
      return true;
    }

    private int indexOfSpace(int from, int end) {
      for (int i = from; i < end; i++) {
        if (line[i] == ' ') {
          return i;
        }
      }
      return -1;
    }

    /** Keep {@code [start, at)} as field {@code index} if it is {@code least} to {@code most}
     * bytes long; whether it was. */
    private boolean take(int index, int start, int least, int most) {
      int length = at - start;
      if (length < least || length > most) {
        return false;
      }
      fields[index] = Arrays.copyOfRange(line, start, at);
      return true;
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
  }
}
