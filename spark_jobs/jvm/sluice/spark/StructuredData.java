package sluice.spark;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.api.java.UDF1;

/**
 * An RFC 5424 message's STRUCTURED-DATA as a map, read in one pass.
 *
 * <p>A Spark SQL function {@code text: string -> map<string, string>}: each parameter's value by
 * {@code <SD-ID>.<PARAM-NAME>}, a name repeated in an element with its first value, the value
 * unescaped ({@code \"}, {@code \\} and {@code \]} are the character; any other backslash is
 * kept); {@code -} (or null) is an empty map (null). The text must be what {@code
 * spark_jobs.formats.syslog_rfc5424.SYSLOG_RFC5424_PATTERN}'s STRUCTURED-DATA group matched: the
 * same map as {@code spark_jobs.formats.syslog_rfc5424.structured_data} makes with Spark's
 * regular expressions, without running four of them per element.
 */
public final class StructuredData implements UDF1<String, Map<String, String>> {
  private static final long serialVersionUID = 1L;

  @Override
  public Map<String, String> call(String text) {
    if (text == null) {
      return null;
    }
    Map<String, String> map = new LinkedHashMap<>();
    int at = 0;
    int length = text.length();
    while (at < length && text.charAt(at) == '[') {
      int id = at + 1;
      at = id;
      while (at < length && text.charAt(at) != ' ' && text.charAt(at) != ']') {
        at++;
      }
      String sdId = text.substring(id, at);
      while (at < length && text.charAt(at) == ' ') {
        int name = at + 1;
        int equals = text.indexOf('=', name);
        if (equals < 0 || equals + 1 >= length || text.charAt(equals + 1) != '"') {
          return map; // not what the pattern matched: what was read so far
        }
        StringBuilder value = new StringBuilder();
        at = equals + 2;
        while (at < length && text.charAt(at) != '"') {
          char c = text.charAt(at);
          if (c == '\\' && at + 1 < length) {
            char next = text.charAt(at + 1);
            if (next == '"' || next == '\\' || next == ']') {
              value.append(next);
            } else {
              value.append(c).append(next);
            }
            at += 2;
          } else {
            value.append(c);
            at++;
          }
        }
        map.putIfAbsent(sdId + "." + text.substring(name, equals), value.toString());
        at++; // the closing quote
      }
      at++; // the closing bracket
    }
    return map;
  }
}
