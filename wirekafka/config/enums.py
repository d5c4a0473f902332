"""DescribeConfigs' enums as they go on the wire: a config's type and where its value comes
from. Topic configs and dynamic broker configs share them."""

TYPE_BOOLEAN, TYPE_STRING, TYPE_INT, TYPE_SHORT, TYPE_LONG, TYPE_DOUBLE, TYPE_LIST = 1, 2, 3, 4, 5, 6, 7
TYPE_CLASS, TYPE_PASSWORD = 8, 9
TYPE_UNKNOWN = 0  # a key Kafka's ConfigDef does not know: reported sensitive, without its value
SOURCE_DYNAMIC_TOPIC, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 2, 3, 4, 5
