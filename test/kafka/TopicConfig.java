// A topic's configuration values (one NAME=VALUE line per name asked) as the broker reports it (Admin.describeConfigs, which librdkafka's node client
// lacks), run by test/kafka/topicConfig.ts with the Java launcher and the broker's own jars.
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.config.ConfigResource;
import java.util.*;
public class TopicConfig {
  public static void main(String[] a) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", a[0]))) {
      ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, a[1]);
      Config config = admin.describeConfigs(List.of(r)).all().get().get(r);
      for (int i = 2; i < a.length; i++) System.out.println(a[i] + "=" + config.get(a[i]).value());
    }
  }
}
