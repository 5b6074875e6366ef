package orderly.bench.peers;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The work every contender does for one event: decode it (JSON), read its key's state (a running
 * count and the last event id, stored as JSON), write the next state, and build the output value
 * {@code {"id":..., "count":...}}.
 */
public final class Tally {
  private static final ObjectMapper JSON = new ObjectMapper();

  private Tally() {}

  /** The new state and the output of one event, both JSON. */
  public record Step(String state, String output) {}

  /**
   * One event: {@code before} is its key's stored state (null for the key's first event),
   * {@code event} the input value.
   */
  public static Step apply(String before, byte[] event) {
    try {
      String id = JSON.readTree(event).get("disputeId").asText();
      long count = before == null ? 1 : JSON.readTree(before).get("count").asLong() + 1;
      ObjectNode state = JSON.createObjectNode().put("count", count).put("lastId", id);
      ObjectNode output = JSON.createObjectNode().put("id", id).put("count", count);
      return new Step(JSON.writeValueAsString(state), JSON.writeValueAsString(output));
    } catch (IOException e) {
      throw new UncheckedIOException("peers contender: an event or a state is not JSON", e);
    }
  }
}
