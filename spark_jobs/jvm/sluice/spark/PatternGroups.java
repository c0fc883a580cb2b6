package sluice.spark;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.api.java.UDF2;

/**
 * Every group of a regular expression's first match in a text, from one match.
 *
 * <p>A Spark SQL function {@code (text: string, pattern: string) -> array<string>}: the groups
 * of {@code pattern}'s first match in {@code text}, in order, a group that took no part in the
 * match as the empty string; null when the pattern does not match, or either is null. It
 * decides and captures as {@code rlike} and {@code regexp_extract} do (the same {@code
 * java.util.regex} engine, the same {@code find}), but matches once for all the groups, where
 * {@code regexp_extract} matches once per group: a format's record of several fields, or a
 * multiline event a pattern runs over to its end, is decoded and matched once.
 *
 * <p>The pattern is a literal of the query in practice: it is compiled once and kept while the
 * calls bring the same one.
 */
public final class PatternGroups implements UDF2<String, String, String[]> {
  private static final long serialVersionUID = 1L;

  /** The last pattern compiled, with its text (read and replaced whole: no lock needed). */
  private transient volatile Compiled last;

  @Override
  public String[] call(String text, String pattern) {
    if (text == null || pattern == null) {
      return null;
    }
    Compiled compiled = last;
    if (compiled == null || !compiled.source.equals(pattern)) {
      compiled = new Compiled(pattern);
      last = compiled;
    }
    Matcher matcher = compiled.pattern.matcher(text);
    if (!matcher.find()) {
      return null;
    }
    String[] groups = new String[matcher.groupCount()];
    for (int index = 0; index < groups.length; index++) {
      String group = matcher.group(index + 1);
      groups[index] = group == null ? "" : group;
    }
    return groups;
  }

  /** A pattern's text and its compiled form. */
  private static final class Compiled {
    final String source;
    final Pattern pattern;

    Compiled(String source) {
      this.source = source;
      this.pattern = Pattern.compile(source);
    }
  }
}
