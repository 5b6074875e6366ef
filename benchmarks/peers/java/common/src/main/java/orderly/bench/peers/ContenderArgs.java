package orderly.bench.peers;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A Java contender's command line: {@code --bootstrap H:P --input T --output T --group G
 * --state-dir D --wait-ms N --concurrency N --commit-every-ms N}, as benchmarks/peers/launch.ts
 * passes it.
 */
public record ContenderArgs(
    String bootstrap, String input, String output, String group, Path stateDir, int waitMs, int concurrency, int commitEveryMs) {

  public static ContenderArgs parse(String[] argv) {
    Map<String, String> values = new HashMap<>();
    for (int i = 0; i + 1 < argv.length; i += 2) {
      if (!argv[i].startsWith("--")) throw new IllegalArgumentException("expected --name value pairs, got '" + argv[i] + "'");
      values.put(argv[i].substring(2), argv[i + 1]);
    }
    return new ContenderArgs(
        required(values, "bootstrap"),
        required(values, "input"),
        required(values, "output"),
        required(values, "group"),
        Path.of(required(values, "state-dir")),
        Integer.parseInt(required(values, "wait-ms")),
        Integer.parseInt(required(values, "concurrency")),
        Integer.parseInt(required(values, "commit-every-ms")));
  }

  private static String required(Map<String, String> values, String name) {
    String value = values.get(name);
    if (value == null) throw new IllegalArgumentException("missing --" + name);
    return value;
  }
}
